"""Linear replies against a stand-in of Linear's GraphQL API (linear_api.py), with Linear's own
SDK as the oracle that the stand-in answers as Linear does and that the gateway asks as the SDK
asks (the same auth header, the same variables)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from gateway.webhook_gateway.replies import (
    Credentials,
    Delivered,
    Failed,
    InstallationTokens,
    LinearIssue,
    RetryLater,
    client_for,
)
from tests.npm_packages import node
from tests.replies.checks import check_a_deleted_message_is_posted_anew
from tests.replies.linear_api import LinearApi, rate_limited

KEY = "lin_api_valid"
OAUTH = "lin_oauth_valid"
ISSUE = LinearIssue(issue_id="2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9")
SDK_SCRIPT = Path(__file__).with_name("linear_sdk.mjs")


@pytest.fixture
def linear() -> LinearApi:
    api = LinearApi(issues={ISSUE.issue_id}, keys={KEY, f"Bearer {OAUTH}"})
    with api.serve():
        yield api


def client(http: httpx.AsyncClient, api: LinearApi, token: str = KEY):
    return client_for(
        "linear", http, Credentials(api_token=token), api.url + "/graphql", InstallationTokens()
    )


@pytest.mark.slow
def test_linears_sdk_and_the_gateway_ask_alike(linear: LinearApi) -> None:
    done = subprocess.run(
        [node(), str(SDK_SCRIPT), linear.url + "/graphql", KEY, ISSUE.issue_id],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    seen = json.loads(done.stdout)
    assert seen["created"]["success"] is True and seen["created"]["commentId"] in linear.comments
    assert seen["updated"] == {"success": True, "commentId": seen["created"]["commentId"]}
    assert seen["refused"]["message"].find("Entity not found") >= 0
    sdk_create = linear.calls[0]
    assert sdk_create.headers["authorization"] == KEY  # a personal key goes as it is
    assert set(sdk_create.body["variables"]["input"]) == {"issueId", "body"}
    sdk_update = linear.calls[1]
    assert set(sdk_update.body["variables"]) == {"id", "input"}


async def test_a_comment_is_created_then_edited(http: httpx.AsyncClient, linear: LinearApi) -> None:
    replies = client(http, linear)
    made = await replies.create(ISSUE, "started")
    assert isinstance(made, Delivered) and made.url and made.url.startswith("https://linear.app/")
    assert await replies.update(ISSUE, made.message_id, "ended") == made
    assert linear.comments[made.message_id]["body"] == "ended"
    create, update = linear.calls
    assert create.headers["authorization"] == KEY
    assert create.body["variables"] == {"input": {"issueId": ISSUE.issue_id, "body": "started"}}
    assert update.body["variables"] == {"id": made.message_id, "input": {"body": "ended"}}


async def test_oauth_tokens_go_as_bearer(http: httpx.AsyncClient, linear: LinearApi) -> None:
    assert isinstance(await client(http, linear, OAUTH).create(ISSUE, "x"), Delivered)
    assert linear.calls[0].headers["authorization"] == f"Bearer {OAUTH}"


async def test_graphql_errors_are_classified(http: httpx.AsyncClient, linear: LinearApi) -> None:
    revoked = await client(http, linear, "lin_api_revoked").create(ISSUE, "x")
    assert isinstance(revoked, Failed) and revoked.error.startswith("AUTHENTICATION_ERROR")
    gone = await client(http, linear).create(LinearIssue(issue_id="deleted"), "x")
    assert isinstance(gone, Failed) and gone.gone and "Entity not found" in gone.error
    reset_ms = int((time.time() + 20) * 1000)
    linear.queue(rate_limited(reset_ms))
    limited = await client(http, linear).create(ISSUE, "x")
    assert isinstance(limited, RetryLater) and limited.error.startswith("RATELIMITED")
    assert limited.after is not None and 15 <= limited.after <= 20
    linear.answer_next(502, "<html>bad gateway</html>")
    assert isinstance(await client(http, linear).create(ISSUE, "x"), RetryLater)
    linear.answer_next(200, {"data": {"commentCreate": {"success": False, "comment": None}}})
    assert await client(http, linear).create(ISSUE, "x") == Failed(
        error="commentCreate: Linear did not report success"
    )
    assert linear.comments == {}


async def test_a_deleted_comment_is_posted_anew(http: httpx.AsyncClient, linear: LinearApi) -> None:
    await check_a_deleted_message_is_posted_anew(client(http, linear), ISSUE, linear.comments.clear)
