"""Work items, end to end on SQLite and PostgreSQL: real payloads (GitHub's from
@octokit/webhooks-examples, Slack's documented samples) through a provider connection. The first
matching event makes a work item and its run; a comment naming the factory (`@fa`, the world's
factory alias) on the same issue, or a reply in the same Slack thread, is a follow-up of that run
(no second run), counted on the work item; a resend counts once; a follow-up of an ended run
queues it again; the work item's stage follows its run and fires the factory's
`work_item_stage_changed` triggers. Linear's documented samples likewise."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import select

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.kernel.settings import Settings
from gateway.webhook_gateway.replies.targets import GitHubThread, LinearIssue, SlackThread
from gateway.webhook_gateway.replies.work_items import run_work_item
from tests.connections import signing
from tests.connections.provider_world import (
    automation,
    connect,
    deliver,
    evaluated,
    runs,
    set_repositories,
    trigger,
)
from tests.platform.runners.test_runner_api import Runner
from tests.providers.conftest import GithubExamples, fixture
from tests.support import GatewayClient, World, eventually

SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
LINEAR_SECRET = "lin_wh_0123456789abcdef"


def work_items(world: World, query: str = "") -> list[dict[str, Any]]:
    answer = world.api("GET", f"/factory/{world.factory_uid}/work-items{query}")
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["work_items"]
    return found


def work_item(world: World, item_id: str) -> dict[str, Any]:
    answer = world.api("GET", f"/factory/{world.factory_uid}/work-items/{item_id}")
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def messages(world: World, run_id: str) -> list[Any]:
    async def read(services: Services) -> list[Any]:
        m = t.run_messages
        query = select(m.c.message, m.c.routing, m.c.attachments).where(m.c.run_id == run_id)
        async with services.database.read() as conn:
            return list(await conn.execute(query.order_by(m.c.created_at)))

    return world.client.run(read)


def runs_of(world: World, automation_uid: str) -> list[Any]:
    """The runs an automation started inside the platform (its metadata names it)."""

    async def read(services: Services) -> list[Any]:
        r = t.runs
        query = select(r.c.run_id, r.c.metadata, r.c.work_item_id)
        async with services.database.read() as conn:
            rows = await conn.execute(query.where(r.c.factory_uid == world.factory_uid))
            return [
                row for row in rows if (row.metadata or {}).get("automation_id") == automation_uid
            ]

    return world.client.run(read)


def target_of_run(world: World, run_id: str) -> Any:
    async def read(services: Services) -> Any:
        async with services.database.read() as conn:
            return await run_work_item(conn, run_id)

    return world.client.run(read)


def mention(github_examples: GithubExamples, body: str) -> Any:
    example = next(p for p in github_examples["issue_comment"] if p["action"] == "created")
    comment = copy.deepcopy(example)
    comment["comment"]["body"] = body
    return comment


@pytest.fixture
def shaped_world(shape_settings: Callable[..., Settings]) -> Iterator[World]:
    """A gateway of each supported shape: embedded on SQLite, Redis ingress on PostgreSQL."""
    with GatewayClient.running(shape_settings()) as client:
        yield World.create(client)


def test_a_github_issue_is_one_work_item_continued_by_mentions(
    world: World, github_examples: GithubExamples
) -> None:
    github_issue_flow(world, github_examples)


def test_work_items_through_each_ingress_shape(
    shaped_world: World, github_examples: GithubExamples
) -> None:
    github_issue_flow(shaped_world, github_examples)


def github_issue_flow(world: World, github_examples: GithubExamples) -> None:
    gw = world.client
    set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
    automation(world, world.factory_uid, "triage", trigger("github", "issue_created"))
    on_cancel = automation(
        world,
        world.factory_uid,
        "wrap-up",
        trigger("factory", "work_item_stage_changed", stages=["CANCELLED"]),
    )
    made = connect(world, "github")
    secret = made["secret"]
    opened = next(p for p in github_examples["issues"] if p["action"] == "opened")
    first = deliver(gw, made, signing.github(secret, "issues", opened, "gh-open"))
    evaluated(world, made, first)
    (run,) = runs(gw, first)
    (item,) = work_items(world)
    assert item["source"] == {
        "provider": "github",
        "kind": "issue",
        "ref": "Codertocat/Hello-World#1",
        "url": "https://github.com/Codertocat/Hello-World/issues/1",
    }
    assert item["stage"] == "TRIAGE" and item["run_ids"] == [run.run_id]
    assert item["followup_count"] == 0
    answer = world.api("GET", f"/agent/runs/{run.run_id}").json()
    assert answer["work_item_id"] == item["id"]
    found = target_of_run(world, run.run_id)
    assert found.id == item["id"]
    assert found.target == GitHubThread(repository="Codertocat/Hello-World", number=1)

    # a comment naming the factory: a follow-up of the same (still queued) run, no new run
    comment = mention(github_examples, "@fa please add a regression test as well")
    second = deliver(gw, made, signing.github(secret, "issue_comment", comment, "gh-c1"))
    evaluated(world, made, second)
    assert runs(gw, second) == []
    # GitHub's resend of the same delivery: the same delivery, nothing more
    assert deliver(gw, made, signing.github(secret, "issue_comment", comment, "gh-c1")) == second
    item = work_item(world, item["id"])
    assert item["followup_count"] == 1 and item["run_ids"] == [run.run_id]
    (sent,) = messages(world, run.run_id)
    assert sent.routing == "queued" and "please add a regression test as well" in sent.message
    assert "Codertocat/Hello-World#1" in sent.message and len(sent.attachments) == 1
    # a comment that names no one continues nothing
    plain = mention(github_examples, "Thanks!")
    evaluated(world, made, deliver(gw, made, signing.github(secret, "issue_comment", plain)))
    assert work_item(world, item["id"])["followup_count"] == 1

    # the run ends: the work item is CANCELLED, which fires the stage trigger
    cancelled = world.api("POST", f"/agent/runs/{run.run_id}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert work_item(world, item["id"])["stage"] == "CANCELLED"
    assert work_items(world, "?stage=CANCELLED")[0]["id"] == item["id"]
    assert work_items(world, "?stage=DONE") == []
    (staged,) = runs_of(world, on_cancel)
    assert staged.metadata["work_item_id"] == item["id"]
    assert staged.metadata["to_stage"] == "CANCELLED" and staged.work_item_id is None

    # a follow-up of the ended run queues it again (as the API's follow-ups do)
    again = mention(github_examples, "@FA one more thing")
    third = deliver(gw, made, signing.github(secret, "issue_comment", again, "gh-c2"))
    evaluated(world, made, third)
    assert runs(gw, third) == []
    assert world.api("GET", f"/agent/runs/{run.run_id}").json()["state"] == "QUEUED"
    item = work_item(world, item["id"])
    assert item["followup_count"] == 2 and item["stage"] == "TODO"
    assert [m.routing for m in messages(world, run.run_id)] == ["queued", "resumed"]
    assert len(runs_of(world, on_cancel)) == 1  # TODO is no stage it listens to


def test_a_slack_thread_reply_continues_the_thread(world: World) -> None:
    gw = world.client
    automation(world, world.factory_uid, "answer", trigger("slack", "app_mention"))
    made = connect(world, "slack", secret=SLACK_SECRET)
    asked = fixture("slack", "app_mention")
    first = deliver(gw, made, signing.slack(SLACK_SECRET, asked))
    evaluated(world, made, first)
    (run,) = runs(gw, first)
    (item,) = work_items(world)
    assert item["source"]["ref"] == "C123ABC456/1515449522.000016"
    assert item["source"]["kind"] == "thread" and item["run_ids"] == [run.run_id]
    found = target_of_run(world, run.run_id)
    assert found.target == SlackThread(channel="C123ABC456", thread_ts="1515449522.000016")

    reply = fixture("slack", "message_channels")
    reply["event_id"] = "Ev-reply-1"
    reply["event"] |= {
        "channel": "C123ABC456",
        "ts": "1515449600.000100",
        "thread_ts": "1515449522.000016",
        "text": "and in French, please",
    }
    second = deliver(gw, made, signing.slack(SLACK_SECRET, reply))
    evaluated(world, made, second)
    assert runs(gw, second) == []
    item = work_item(world, item["id"])
    assert item["followup_count"] == 1 and item["run_ids"] == [run.run_id]
    (sent,) = messages(world, run.run_id)
    assert "and in French, please" in sent.message
    # Slack sends a reply that mentions the app twice: as `message` and as `app_mention`
    as_mention = copy.deepcopy(reply)
    as_mention["event_id"] = "Ev-reply-1-mention"
    as_mention["event"]["type"] = "app_mention"
    third = deliver(gw, made, signing.slack(SLACK_SECRET, as_mention))
    evaluated(world, made, third)
    assert runs(gw, third) == []
    assert work_item(world, item["id"])["followup_count"] == 1
    assert len(messages(world, run.run_id)) == 1

    # a message in another thread, or outside any, continues nothing
    elsewhere = copy.deepcopy(reply)
    elsewhere["event_id"] = "Ev-reply-2"
    elsewhere["event"]["thread_ts"] = "1515449000.000001"
    evaluated(world, made, deliver(gw, made, signing.slack(SLACK_SECRET, elsewhere)))
    assert work_item(world, item["id"])["followup_count"] == 1
    assert len(work_items(world)) == 1


def test_work_items_are_the_factorys_own(world: World) -> None:
    missing = world.api("GET", f"/factory/{world.factory_uid}/work-items/wi_nope")
    assert missing.status_code == 404
    stranger = world.api("GET", f"/factory/{world.factory_uid}/work-items", headers=world.stranger)
    assert stranger.status_code in (403, 404)
    assert eventually(lambda: work_items(world) == [])


def test_a_mention_reaches_the_live_run_at_its_next_heartbeat(
    world: World, github_examples: GithubExamples
) -> None:
    gw = world.client
    set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
    automation(world, world.factory_uid, "triage", trigger("github", "issue_created"))
    made = connect(world, "github")
    opened = next(p for p in github_examples["issues"] if p["action"] == "opened")
    first = deliver(gw, made, signing.github(made["secret"], "issues", opened, "gh-live"))
    evaluated(world, made, first)
    (run,) = runs(gw, first)
    runner = Runner(world)
    (claimed,) = runner.claim()
    assert claimed["run_id"] == run.run_id
    (item,) = work_items(world)
    assert item["stage"] == "IN_PROGRESS"  # its run started

    comment = mention(github_examples, "@fa use the new endpoint")
    second = deliver(gw, made, signing.github(made["secret"], "issue_comment", comment))
    evaluated(world, made, second)
    beat = runner.on(run.run_id, "heartbeat")
    (sent,) = beat["messages"]
    assert sent["routing"] == "injected" and "use the new endpoint" in sent["message"]
    (file,) = sent["files"]
    assert file["name"] == f"event-payload-{second}.json"
    fetched = gw.get(file["download_url"].removeprefix("http://testserver"))
    assert fetched.status_code == 200 and fetched.content == signing.encode(comment)
    assert runner.on(run.run_id, "heartbeat")["messages"] == []  # delivered once

    runner.on(run.run_id, "finish", outcome="SUCCEEDED", status_message="done", transcript="")
    item = work_item(world, item["id"])
    assert item["stage"] == "DONE" and item["followup_count"] == 1


def test_a_linear_comment_naming_the_factory_continues_the_issue(world: World) -> None:
    gw = world.client
    automation(world, world.factory_uid, "intake", trigger("linear", "issue_created"))
    made = connect(world, "linear", secret=LINEAR_SECRET)
    created = fixture("linear", "issue_create")
    first = deliver(gw, made, signing.linear(LINEAR_SECRET, created))
    evaluated(world, made, first)
    (run,) = runs(gw, first)
    (item,) = work_items(world)
    issue_id = created["data"]["id"]
    assert item["source"]["ref"] == issue_id and item["source"]["kind"] == "issue"
    assert target_of_run(world, run.run_id).target == LinearIssue(issue_id=issue_id)

    comment = fixture("linear", "comment_create")  # Linear's sample, on the same issue
    comment["data"] |= {"issueId": issue_id, "body": "@fa can you also handle archived ones?"}
    comment["data"]["issue"]["id"] = issue_id
    second = deliver(gw, made, signing.linear(LINEAR_SECRET, comment))
    evaluated(world, made, second)
    assert runs(gw, second) == []
    item = work_item(world, item["id"])
    assert item["followup_count"] == 1 and item["run_ids"] == [run.run_id]
    (sent,) = messages(world, run.run_id)
    assert "handle archived ones" in sent.message
