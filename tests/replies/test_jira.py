"""Jira replies against a stand-in of Jira Cloud's REST API v3 (jira_api.py), which checks
every comment body against Atlassian's own ADF JSON schema, as Jira refuses an invalid one."""

from __future__ import annotations

import base64

import httpx
import pytest

from gateway.webhook_gateway.replies import (
    Credentials,
    Delivered,
    Failed,
    InstallationTokens,
    JiraIssue,
    RetryLater,
    client_for,
)
from gateway.webhook_gateway.replies.adf import document
from tests.replies.jira_api import JiraApi, adf_problems

EMAIL, TOKEN = "bot@acme.example", "ATATT3x-valid"
ISSUE = JiraIssue(issue_key="KAN-12")
TEXT = (
    "✅ **Foreman** finished: [the run](https://gw.example/console/runs/r1)\n\nDone.\n\n"
    "- [PR](https://github.com/o/r/pull/1)\n- report.md"
)


@pytest.fixture
def jira() -> JiraApi:
    api = JiraApi(issues={"KAN-12"}, accounts={EMAIL: TOKEN})
    with api.serve():
        yield api


def client(http: httpx.AsyncClient, api: JiraApi, token: str = TOKEN):
    return client_for(
        "jira", http, Credentials(email=EMAIL, api_token=token), api.url, InstallationTokens()
    )


async def test_a_comment_in_adf_is_created_then_edited(
    http: httpx.AsyncClient, jira: JiraApi
) -> None:
    replies = client(http, jira)
    made = await replies.create(ISSUE, TEXT)
    assert made == Delivered(
        message_id="10000", url=f"{jira.url}/browse/KAN-12?focusedCommentId=10000"
    )
    assert await replies.update(ISSUE, "10000", "ended") == made
    create, update = jira.calls
    assert (create.method, create.path) == ("POST", "/rest/api/3/issue/KAN-12/comment")
    assert (update.method, update.path) == ("PUT", "/rest/api/3/issue/KAN-12/comment/10000")
    assert (
        create.headers["authorization"]
        == "Basic " + base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()
    )
    assert create.body == {"body": document(TEXT)} and adf_problems(create.body["body"]) == []
    strong = create.body["body"]["content"][0]["content"][1]
    assert strong == {"type": "text", "text": "Foreman", "marks": [{"type": "strong"}]}
    assert jira.comments["10000"]["body"] == document("ended")


def test_the_schema_refuses_what_jira_refuses() -> None:
    assert adf_problems({"type": "doc", "version": 1, "content": [{"type": "text", "text": "x"}]})
    empty_text = {
        "type": "doc",
        "version": 1,
        "content": [{"type": "paragraph", "content": [{"type": "text", "text": ""}]}],
    }
    assert adf_problems(empty_text)
    assert adf_problems(document("")) == []


async def test_refusals(http: httpx.AsyncClient, jira: JiraApi) -> None:
    revoked = await client(http, jira, "revoked").create(ISSUE, "x")
    assert revoked == Failed(
        error="401 Unauthorized: Client must be authenticated to access this resource.", status=401
    )
    gone = await client(http, jira).create(JiraIssue(issue_key="KAN-404"), "x")
    assert gone == Failed(
        error="404 Not Found: Issue does not exist or you do not have permission to see it.",
        gone=True,
        status=404,
    )
    jira.answer_next(429, {"errorMessages": ["Rate limit exceeded."]}, {"Retry-After": "12"})
    assert await client(http, jira).create(ISSUE, "x") == RetryLater(
        error="429 Too Many Requests: Rate limit exceeded.", after=12.0, status=429
    )
    jira.answer_next(503, "")
    assert isinstance(await client(http, jira).create(ISSUE, "x"), RetryLater)
    assert jira.comments == {}
