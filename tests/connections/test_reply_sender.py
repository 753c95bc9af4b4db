"""The reply sender (the outbound dispatcher's `reply` kind): a message posted, then edited,
through a connection's stored credentials, API root and templates, against the providers'
stand-ins on loopback; on both stores."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from msgspec import structs

from gateway.webhook_gateway.connections.reply_sender import ReplyMessage, ReplySender, run_page
from gateway.webhook_gateway.replies import (
    Artifact,
    Delivered,
    Failed,
    GitHubThread,
    JiraIssue,
    ReplyContext,
    SlackThread,
)
from gateway.webhook_gateway.replies.adf import document
from tests.replies.github_api import GitHubApi
from tests.replies.jira_api import JiraApi, adf_problems
from tests.replies.slack_api import SlackApi
from tests.support import World

BASE = "/provider-connections"
ISSUE = GitHubThread(repository="octo-org/hello", number=7)


def context(phase: str, **changes: Any) -> ReplyContext:
    started = ReplyContext(
        phase="started",
        run_id="run_1",
        run_title="Triage #7",
        run_url=run_page("https://gw.example", "run_1"),
        state="INPROGRESS",
        agent="Foreman",
        factory="Factory A",
        automation="triage",
        actor="octocat",
    )
    if phase == "ended":
        pull = Artifact(
            kind="pull_request", title="Fix #7", url="https://github.com/octo-org/hello/pull/8"
        )
        started = structs.replace(
            started,
            phase="ended",
            state="SUCCEEDED",
            status_message="Opened a fix.",
            artifacts=(pull,),
        )
    return structs.replace(started, **changes)


def connect(world: World, **body: Any) -> str:
    response = world.api("POST", BASE, json=body)
    assert response.status_code == 201, response.text
    uid: str = response.json()["uid"]
    return uid


def send(world: World, *messages: ReplyMessage) -> list[Any]:
    async def run(services: Any) -> list[Any]:
        async with httpx.AsyncClient(timeout=10) as http:
            sender = ReplySender(services.database, services.secret_box, http)
            return [await sender.send(message) for message in messages]

    return world.client.run(run)


@pytest.fixture
def github() -> GitHubApi:
    api = GitHubApi(issues={"octo-org/hello#7"}, tokens={"ghp_valid"})
    with api.serve():
        yield api


def test_one_comment_posted_at_the_start_and_edited_at_the_end(
    world: World, github: GitHubApi
) -> None:
    uid = connect(world, provider="github", api_token="ghp_valid", api_base_url=github.url)
    (started,) = send(
        world, ReplyMessage(connection_uid=uid, target=ISSUE, context=context("started"))
    )
    assert isinstance(started, Delivered)
    assert github.comments[int(started.message_id)]["body"] == (
        "🤖 **Foreman** is working on it (triage), for octocat.\n\n"
        "[Triage \\#7](https://gw.example/console/runs/run_1)"
    )
    ended_message = ReplyMessage(
        connection_uid=uid, target=ISSUE, context=context("ended"), message_id=started.message_id
    )
    (ended,) = send(world, ended_message)
    assert ended == started and len(github.comments) == 1
    body = github.comments[int(started.message_id)]["body"]
    assert body.startswith(
        "✅ **Foreman** finished: [Triage \\#7](https://gw.example/console/runs/run_1)"
    )
    assert (
        "Opened a fix." in body and "- [Fix \\#7](https://github.com/octo-org/hello/pull/8)" in body
    )


def test_the_connections_own_templates_are_used(world: World, github: GitHubApi) -> None:
    templates = {"started": "{{ agent.name }} took {{ link(run.url, 'run ' ~ run.id) }}"}
    uid = connect(world, provider="github", api_token="ghp_valid", api_base_url=github.url,
                  reply_templates=templates)  # fmt: skip
    (made,) = send(
        world, ReplyMessage(connection_uid=uid, target=ISSUE, context=context("started"))
    )
    assert isinstance(made, Delivered)
    assert github.comments[int(made.message_id)]["body"] == (
        "Foreman took [run run\\_1](https://gw.example/console/runs/run_1)"
    )


def test_a_connection_that_cannot_reply_says_why(world: World, github: GitHubApi) -> None:
    bare = connect(world, provider="github")
    disabled = connect(world, provider="github", api_token="ghp_valid", api_base_url=github.url)
    world.api("PATCH", f"{BASE}/{disabled}", json={"enabled": False})
    deleted = connect(world, provider="github", api_token="ghp_valid", api_base_url=github.url)
    world.api("DELETE", f"{BASE}/{deleted}")
    wrong = connect(world, provider="slack", bot_token="xoxb-1", api_base_url=github.url)
    outcomes = send(world, *(
        ReplyMessage(connection_uid=uid, target=ISSUE, context=context("started"))
        for uid in (bare, disabled, deleted, wrong)
    ))  # fmt: skip
    assert outcomes == [
        Failed(error=f"provider connection {bare} has no reply credentials"),
        Failed(error=f"provider connection {disabled} is disabled"),
        Failed(error=f"provider connection {deleted} was deleted"),
        Failed(error="a Slack connection cannot reply on a GitHubThread"),
    ]
    assert github.calls == []


def test_slack_and_jira_through_the_sender(world: World) -> None:
    thread = SlackThread(channel="C0123ABCD", thread_ts="1699999999.000100")
    slack = SlackApi(channels={thread.channel}, tokens={"xoxb-valid"})
    jira = JiraApi(issues={"KAN-1"}, accounts={"bot@acme.example": "ATATT-valid"})
    with slack.serve(), jira.serve():
        on_slack = connect(
            world, provider="slack", bot_token="xoxb-valid", api_base_url=slack.url + "/api"
        )
        on_jira = connect(world, provider="jira", email="bot@acme.example", api_token="ATATT-valid",
                          api_base_url=jira.url)  # fmt: skip
        posted, commented = send(
            world,
            ReplyMessage(connection_uid=on_slack, target=thread, context=context("ended")),
            ReplyMessage(
                connection_uid=on_jira,
                target=JiraIssue(issue_key="KAN-1"),
                context=context("ended"),
            ),
        )
    assert isinstance(posted, Delivered) and isinstance(commented, Delivered)
    text = slack.messages[(thread.channel, posted.message_id)]["text"]
    assert text.startswith(
        "✅ *Foreman* finished: <https://gw.example/console/runs/run_1|Triage #7>"
    )
    body = jira.comments[commented.message_id]["body"]
    assert adf_problems(body) == [] and body == document(
        "✅ **Foreman** finished: [Triage \\#7](https://gw.example/console/runs/run_1)\n\n"
        "Opened a fix.\n\n- [Fix \\#7](https://github.com/octo-org/hello/pull/8)"
    )
