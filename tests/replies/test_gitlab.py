"""GitLab replies against a stand-in of GitLab's REST API v4 notes (gitlab_api.py)."""

from __future__ import annotations

import httpx
import pytest

from gateway.webhook_gateway.replies import (
    Credentials,
    Delivered,
    Failed,
    GitLabThread,
    InstallationTokens,
    RetryLater,
    client_for,
)
from tests.replies.gitlab_api import GitLabApi

TOKEN = "glpat-valid"
MR_URL = "https://gitlab.example/acme/platform/api/-/merge_requests/4"
MERGE_REQUEST = GitLabThread(project="acme/platform/api", kind="merge_request", iid=4, url=MR_URL)
ISSUE = GitLabThread(project="acme/platform/api", kind="issue", iid=9)


@pytest.fixture
def gitlab() -> GitLabApi:
    api = GitLabApi(threads={"acme/platform/api!4", "acme/platform/api#9"}, tokens={TOKEN})
    with api.serve():
        yield api


def client(http: httpx.AsyncClient, api: GitLabApi, token: str = TOKEN):
    return client_for(
        "gitlab", http, Credentials(api_token=token), api.url + "/api/v4", InstallationTokens()
    )


async def test_a_note_is_created_then_edited(http: httpx.AsyncClient, gitlab: GitLabApi) -> None:
    replies = client(http, gitlab)
    made = await replies.create(MERGE_REQUEST, "started")
    assert made == Delivered(message_id="302", url=f"{MR_URL}#note_302")
    assert await replies.update(MERGE_REQUEST, "302", "ended") == made
    create, update = gitlab.calls
    assert create.path == "/api/v4/projects/acme%2Fplatform%2Fapi/merge_requests/4/notes"
    assert (update.method, update.path) == ("PUT", create.path + "/302")
    assert create.headers["private-token"] == TOKEN and create.body == {"body": "started"}
    on_issue = await replies.create(ISSUE, "on an issue")
    assert on_issue == Delivered(message_id="303", url=None)  # no page URL known: no link
    assert gitlab.calls[-1].path == "/api/v4/projects/acme%2Fplatform%2Fapi/issues/9/notes"


async def test_refusals(http: httpx.AsyncClient, gitlab: GitLabApi) -> None:
    revoked = await client(http, gitlab, "glpat-revoked").create(ISSUE, "x")
    assert revoked == Failed(error="401 Unauthorized: 401 Unauthorized", status=401)
    gone = await client(http, gitlab).create(
        GitLabThread(project="acme/x", kind="issue", iid=1), "x"
    )
    assert isinstance(gone, Failed) and gone.gone
    gitlab.answer_next(
        429, {"message": "Retry later"}, {"Retry-After": "5", "RateLimit-Reset": "1"}
    )
    assert await client(http, gitlab).create(ISSUE, "x") == RetryLater(
        error="429 Too Many Requests: Retry later", after=5.0, status=429
    )
    assert gitlab.notes == {}
