"""The rules under the clients: when to come back (Retry-After and the providers' reset
headers), what the provider said, and which credentials each provider takes."""

from __future__ import annotations

from email.utils import formatdate

import httpx
import pytest

from gateway.webhook_gateway.replies import Failed
from gateway.webhook_gateway.replies.credentials import api_root, check_fields
from gateway.webhook_gateway.replies.http import call, error_text, refusal, retry_after

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "after"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": formatdate(NOW + 42, usegmt=True)}, 42.0),
        ({"Retry-After": formatdate(NOW - 5, usegmt=True)}, 0.0),  # a date passed: now
        ({"x-ratelimit-reset": str(int(NOW) + 30)}, 30.0),  # GitHub: Unix seconds
        ({"RateLimit-Reset": str(int(NOW) + 9)}, 9.0),  # GitLab
        ({"X-RateLimit-Requests-Reset": str(int(NOW * 1000) + 1500)}, 1.5),  # Linear: ms
        ({"Retry-After": "86400"}, None),  # longer than an hour: the backoff decides
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after(headers: dict[str, str], after: float | None) -> None:
    assert retry_after(headers, now=NOW) == after


def test_error_text_reads_each_providers_shape() -> None:
    def text(status: int, **kwargs: object) -> str:
        return error_text(httpx.Response(status, **kwargs))  # type: ignore[arg-type]

    assert (
        text(401, json={"message": "Bad credentials", "documentation_url": "x"})
        == "Bad credentials"
    )
    assert text(400, json={"errorMessages": ["a"], "errors": {"comment": "b"}}) == "a; comment: b"
    assert text(400, json={"error": "body is missing"}) == "body is missing"
    assert text(502, text="<html>" + "x" * 1000) == ("<html>" + "x" * 1000)[:300]


def test_a_403_is_a_rate_limit_only_when_github_says_so() -> None:
    limited = refusal(httpx.Response(403, headers={"x-ratelimit-remaining": "0"}))
    assert limited is not None and type(limited).__name__ == "RetryLater"
    forbidden = refusal(httpx.Response(403, json={"message": "Must have admin rights"}))
    assert forbidden is not None and type(forbidden).__name__ == "Failed"
    assert refusal(httpx.Response(201)) is None


@pytest.mark.parametrize(
    ("provider", "fields", "base", "problem"),
    [
        ("slack", {"api_token"}, None,
         "api_token: Slack connections take no api_token (bot_token)"),
        ("github", {"bot_token"}, None, "bot_token: GitHub connections take no bot_token "
         "(api_token or app_id, private_key and installation_id)"),
        ("github", {"app_id"}, None, "private_key: GitHub needs app_id, private_key and "
         "installation_id together"),
        ("github", {"api_token", "app_id"}, None, "app_id: GitHub takes api_token or app_id, "
         "private_key and installation_id, not both"),
        ("jira", {"email"}, "https://x.atlassian.net",
         "api_token: Jira needs api_token and email together"),
        ("jira", {"email", "api_token"}, None, "api_base_url: required with Jira credentials"),
        ("gitlab", {"email"}, None, "email: GitLab connections take no email (api_token)"),
    ],
)  # fmt: skip
def test_each_provider_takes_its_own_credentials(
    provider: str, fields: set[str], base: str | None, problem: str
) -> None:
    with pytest.raises(ValueError, match="^" + problem.replace("(", r"\(").replace(")", r"\)")):
        check_fields(provider, fields, base)


@pytest.mark.parametrize(
    ("provider", "fields", "base"),
    [
        ("github", set(), None),  # ingress only
        ("github", {"api_token"}, None),
        ("github", {"app_id", "private_key", "installation_id"}, "https://ghe.example/api/v3"),
        ("gitlab", {"api_token"}, None),
        ("slack", {"bot_token"}, None),
        ("linear", {"api_token"}, None),
        ("jira", {"email", "api_token"}, "https://acme.atlassian.net"),
    ],
)
def test_complete_sets_are_taken(provider: str, fields: set[str], base: str | None) -> None:
    check_fields(provider, fields, base)


def test_api_roots() -> None:
    assert api_root("github", None) == "https://api.github.com"
    assert api_root("gitlab", "https://git.example/api/v4/") == "https://git.example/api/v4"
    with pytest.raises(ValueError, match=r"^api_base_url: Jira"):
        api_root("jira", None)


class Refusing:
    """An HTTP client that refuses the destination before any byte is sent, as the outbound
    package's does for a private address: with an httpx error that is not a network one."""

    async def request(self, method: str, url: str, **_: object) -> httpx.Response:
        raise httpx.TooManyRedirects("refused", request=httpx.Request(method, url))


async def test_an_http_error_that_is_not_the_networks_is_final() -> None:
    outcome = await call(Refusing(), "POST", "http://10.0.0.1/x", {})
    assert outcome == Failed(error="TooManyRedirects: refused")
