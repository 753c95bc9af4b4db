"""GitHub replies against a stand-in of GitHub's REST API (github_api.py): one comment created,
then edited in place; tokens and GitHub App installation tokens; every refusal classified."""

from __future__ import annotations

import socket
import time

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from gateway.webhook_gateway.replies import (
    Credentials,
    Delivered,
    Failed,
    GitHubThread,
    InstallationTokens,
    RetryLater,
    client_for,
)
from gateway.webhook_gateway.replies.github_app import RENEW_BEFORE
from tests.replies.checks import check_a_deleted_message_is_posted_anew
from tests.replies.github_api import GitHubApi

ISSUE = GitHubThread(repository="octo-org/hello", number=7)
TOKEN = "ghp_valid"


def pem(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,  # what GitHub hands out
        serialization.NoEncryption(),
    ).decode()


@pytest.fixture
def github() -> GitHubApi:
    api = GitHubApi(issues={"octo-org/hello#7"}, tokens={TOKEN})
    with api.serve():
        yield api


def client(
    http: httpx.AsyncClient, api: GitHubApi, tokens: InstallationTokens | None = None, **given: str
):
    credentials = Credentials(**(given or {"api_token": TOKEN}))
    return client_for("github", http, credentials, api.url, tokens or InstallationTokens())


async def test_a_comment_is_created_then_edited_in_place(
    http: httpx.AsyncClient, github: GitHubApi
) -> None:
    replies = client(http, github)
    made = await replies.create(ISSUE, "started")
    assert isinstance(made, Delivered)
    assert made.url == f"https://github.com/octo-org/hello/issues/7#issuecomment-{made.message_id}"
    edited = await replies.update(ISSUE, made.message_id, "ended")
    assert edited == Delivered(message_id=made.message_id, url=made.url)
    assert [c["body"] for c in github.comments.values()] == ["ended"]
    first, second = github.calls
    assert (first.method, first.path) == ("POST", "/repos/octo-org/hello/issues/7/comments")
    assert (second.method, second.path) == (
        "PATCH",
        f"/repos/octo-org/hello/issues/comments/{made.message_id}",
    )
    assert first.headers["authorization"] == f"Bearer {TOKEN}"
    assert first.headers["accept"] == "application/vnd.github+json"
    assert first.headers["x-github-api-version"] == "2022-11-28"
    assert first.body == {"body": "started"} and second.body == {"body": "ended"}


async def test_5xx_then_success_leaves_one_comment(
    http: httpx.AsyncClient, github: GitHubApi
) -> None:
    github.answer_next(502, "<html>Bad gateway</html>")
    replies = client(http, github)
    first = await replies.create(ISSUE, "started")
    assert isinstance(first, RetryLater) and first.error.startswith("502") and first.after is None
    assert isinstance(await replies.create(ISSUE, "started"), Delivered)
    assert len(github.comments) == 1


async def test_rate_limits_say_when_to_come_back(
    http: httpx.AsyncClient, github: GitHubApi
) -> None:
    github.answer_next(429, {"message": "slow down"}, {"Retry-After": "7"})
    reset = int(time.time()) + 30
    github.answer_next(
        403,
        {"message": "API rate limit exceeded for installation ID 1."},
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
    )
    github.answer_next(
        403, {"message": "You have exceeded a secondary rate limit"}, {"Retry-After": "60"}
    )
    replies = client(http, github)
    assert await replies.create(ISSUE, "x") == RetryLater(
        error="429 Too Many Requests: slow down", after=7.0, status=429
    )
    primary = await replies.create(ISSUE, "x")
    assert (
        isinstance(primary, RetryLater) and primary.after is not None and 25 <= primary.after <= 30
    )
    secondary = await replies.create(ISSUE, "x")
    assert isinstance(secondary, RetryLater) and secondary.after == 60.0
    assert github.comments == {}


async def test_refusals_are_final_with_githubs_own_words(
    http: httpx.AsyncClient, github: GitHubApi
) -> None:
    revoked = await client(http, github, api_token="ghp_revoked").create(ISSUE, "x")
    assert revoked == Failed(error="401 Unauthorized: Bad credentials", status=401)
    gone = await client(http, github).create(
        GitHubThread(repository="octo-org/hello", number=8), "x"
    )
    assert isinstance(gone, Failed) and gone.gone and gone.status == 404
    github.answer_next(403, {"message": "Resource not accessible by integration"})
    forbidden = await client(http, github).create(ISSUE, "x")
    assert forbidden == Failed(
        error="403 Forbidden: Resource not accessible by integration", status=403
    )


async def test_a_deleted_comment_is_posted_anew(http: httpx.AsyncClient, github: GitHubApi) -> None:
    await check_a_deleted_message_is_posted_anew(client(http, github), ISSUE, github.comments.clear)


async def test_a_network_failure_is_retried(http: httpx.AsyncClient) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    credentials = Credentials(api_token=TOKEN)
    replies = client_for(
        "github", http, credentials, f"http://127.0.0.1:{port}", InstallationTokens()
    )
    failed = await replies.create(ISSUE, "x")
    assert isinstance(failed, RetryLater) and failed.error.startswith("ConnectError")
    unusable = client_for("github", http, credentials, "ftp://127.0.0.1", InstallationTokens())
    assert isinstance(await unusable.create(ISSUE, "x"), Failed)


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


async def test_a_github_app_exchanges_a_jwt_and_caches_the_token(
    http: httpx.AsyncClient, github: GitHubApi
) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    github.apps["123456"] = key.public_key()
    github.installations["987"] = "123456"
    clock = Clock()
    github.clock = tokens_clock = clock
    tokens = InstallationTokens(tokens_clock)
    app = {"app_id": "123456", "private_key": pem(key), "installation_id": "987"}
    replies = client(http, github, tokens, **app)
    for text in ("one", "two"):
        assert isinstance(await replies.create(ISSUE, text), Delivered)
    exchanges = github.calls_to(r"/app/installations/987/access_tokens")
    assert len(exchanges) == 1  # the second reply used the cached token
    used = {call.headers["authorization"] for call in github.calls_to(r".*/comments")}
    assert len(used) == 1 and used.pop().startswith("Bearer ghs_")
    clock.now += 3600 - RENEW_BEFORE + 1  # shortly before the hour is up: a new token
    assert isinstance(await replies.create(ISSUE, "three"), Delivered)
    assert len(github.calls_to(r"/app/installations/987/access_tokens")) == 2


async def test_a_revoked_installation_token_is_replaced_once(
    http: httpx.AsyncClient, github: GitHubApi
) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    github.apps["42"], github.installations["5"] = key.public_key(), "42"
    tokens = InstallationTokens()
    replies = client(http, github, tokens, app_id="42", private_key=pem(key), installation_id="5")
    assert isinstance(await replies.create(ISSUE, "one"), Delivered)
    github.tokens = {TOKEN}  # GitHub revoked the installation token the gateway holds
    retry = await replies.create(ISSUE, "two")
    assert retry == RetryLater(error="401 Unauthorized: Bad credentials", after=0.0)
    assert isinstance(await replies.create(ISSUE, "two"), Delivered)  # a new token
    github.installations.clear()  # the app was uninstalled
    github.tokens = {TOKEN}
    assert isinstance(await replies.create(ISSUE, "three"), RetryLater)  # cached token refused
    final = await replies.create(ISSUE, "three")
    assert isinstance(final, Failed) and final.error.startswith(
        "GitHub App installation token: 404"
    )


async def test_a_jwt_signed_with_another_key_is_refused(
    http: httpx.AsyncClient, github: GitHubApi
) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    github.apps["42"], github.installations["5"] = key.public_key(), "42"
    replies = client(http, github, app_id="42", private_key=pem(other), installation_id="5")
    refused = await replies.create(ISSUE, "x")
    assert refused == Failed(
        error="GitHub App installation token: 401 Unauthorized: A JSON web token could not be "
        "decoded",
        status=401,
    )
    assert github.comments == {}
