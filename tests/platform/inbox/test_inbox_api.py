"""GET /factory-inbox and the read/unread mutations, with notifications produced by real events:
runs that fail or need input, task stage changes, webhook work a factory could not start."""

from __future__ import annotations

from typing import Any

from gateway.foundation.accounts import identities
from gateway.foundation.services import Services
from gateway.platform.factories.foreman import set_foreman as assign_foreman
from tests.platform.runners.test_runner_api import Runner
from tests.platform.runs.runs_support import advance, new_run
from tests.support import World, eventually

INBOX = "/factory-inbox"
READ, UNREAD = INBOX + "/notifications/read", INBOX + "/notifications/unread"


def _dispatch(world: World, title: str) -> dict[str, Any]:
    run = world.api(
        "POST", f"/factory/{world.factory_uid}/runs", json={"prompt": "p", "title": title}
    )
    assert run.status_code == 201, run.text
    created: dict[str, Any] = run.json()
    return created


def _inbox(world: World, headers: dict[str, str] | None = None, **params: Any) -> dict[str, Any]:
    response = world.api("GET", INBOX, headers=headers, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _teammate(world: World) -> dict[str, str]:
    async def go(services: Services) -> str:
        async with services.database.transaction() as conn:
            _, key = await identities.create_user(conn, world.team_uid, "late@example.com")
        return key

    return {"Authorization": f"Bearer {world.client.run(go)}"}


def test_failed_and_blocked_runs_notify_the_team_until_resolved(world: World) -> None:
    failing, asking = _dispatch(world, "Breaks"), _dispatch(world, "Asks")
    advance(world, failing["run_id"], "claim", "start", "fail", message="setup failed")
    advance(world, asking["run_id"], "claim", "start", "block")
    mine = _inbox(world)["notifications"]
    assert [(n["kind"], n["run_id"], n["is_read"]) for n in mine] == [
        ("run_needs_input", asking["run_id"], False),
        ("run_failed", failing["run_id"], False),
    ]
    assert mine[1]["detail"] == "setup failed" and mine[1]["factory_uid"] == world.factory_uid
    # team scope: agent credentials allowed, no read state (it is each recipient's own)
    team = _inbox(world, headers=world.agent, scope="team")["notifications"]
    assert [n["uid"] for n in team] == [n["uid"] for n in mine]
    assert all("is_read" not in n for n in team)
    advance(world, asking["run_id"], "unblock")  # the input came: that notice is over
    assert [n["run_id"] for n in _inbox(world)["notifications"]] == [failing["run_id"]]
    # a standalone run (no factory) has no inbox
    standalone = world.api("POST", "/agent/runs", json={"prompt": "p"}).json()
    advance(world, standalone["run_id"], "claim", "start", "fail")
    assert len(_inbox(world)["notifications"]) == 1


def test_a_run_that_its_runner_reports_blocked_notifies_with_its_question(world: World) -> None:
    """The runner's status message is the notice's detail: written before the notice is made."""
    run = _dispatch(world, "Asks")
    runner = Runner(world)
    # its task is bound in the background, under a row lock a claim skips: claim until it comes
    assert [claimed["run_id"] for claimed in eventually(runner.claim)] == [run["run_id"]]
    runner.on(run["run_id"], "progress", state="INPROGRESS")
    runner.on(run["run_id"], "progress", state="BLOCKED", status_message="Which branch?")
    found = _inbox(world)["notifications"]
    assert [(n["kind"], n["detail"]) for n in found] == [("run_needs_input", "Which branch?")]


def test_a_follow_up_that_answers_or_resumes_the_run_resolves_its_notice(world: World) -> None:
    asking, failing = _dispatch(world, "Asks"), _dispatch(world, "Breaks")
    advance(world, asking["run_id"], "claim", "start", "block")
    advance(world, failing["run_id"], "claim", "start", "fail")
    assert len(_inbox(world)["notifications"]) == 2
    for run in (asking, failing):
        path = f"/agent/runs/{run['run_id']}/followups"
        assert world.api("POST", path, json={"message": "go on"}).status_code == 200
    assert _inbox(world)["notifications"] == []
    timeline = world.api("GET", f"/agent/runs/{failing['run_id']}/timeline").json()
    assert [e["state"] for e in timeline["events"]][-2:] == ["FAILED", "QUEUED"]


def test_a_run_has_one_active_notice_its_newest(world: World) -> None:
    run = _dispatch(world, "Flaky")
    advance(world, run["run_id"], "claim", "start", "block")
    advance(world, run["run_id"], "error", message="harness crashed")  # leaves BLOCKED
    assert _inbox(world)["notifications"] == []
    again = _dispatch(world, "Twice")
    advance(world, again["run_id"], "claim", "start", "fail", message="first")
    path = f"/agent/runs/{again['run_id']}/followups"
    assert world.api("POST", path, json={"message": "retry"}).json()["state"] == "QUEUED"
    advance(world, again["run_id"], "claim", "start", "fail", message="second")
    found = _inbox(world)["notifications"]
    assert [(n["run_id"], n["detail"]) for n in found] == [(again["run_id"], "second")]


def test_task_stage_changes_notify_and_supersede_each_other(world: World) -> None:
    run = new_run(world)
    task = world.api(
        "POST",
        f"/factory/{world.factory_uid}/tasks",
        json={"title": "T", "conversation_id": run["conversation_id"]},
    ).json()
    one = f"/factory/{world.factory_uid}/tasks/{task['uid']}"
    assert world.api("PATCH", one, json={"title": "T2"}).status_code == 200
    assert _inbox(world)["notifications"] == []  # no stage change, no notice
    world.api("PATCH", one, json={"stage": "TODO"})
    world.api("PATCH", one, json={"stage": "IN_REVIEW"})
    found = _inbox(world)["notifications"]
    assert [(n["kind"], n["task_uid"], n["detail"]) for n in found] == [
        ("task_stage_changed", task["uid"], "from TODO to IN_REVIEW")
    ]
    assert world.api("DELETE", one).status_code == 204
    assert _inbox(world)["notifications"] == []


def test_read_and_unread_answer_one_outcome_per_notification_in_order(world: World) -> None:
    for title in ("a", "b"):
        advance(world, _dispatch(world, title)["run_id"], "claim", "start", "fail")
    late = _teammate(world)  # joined after the notifications were made: not a recipient
    first, second = (n["uid"] for n in _inbox(world)["notifications"])
    body = {"notification_uids": [second, "ntf_missing", first]}
    answer = world.api("POST", READ, json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["results"] == [
        {"notification_uid": second, "success": True, "error": None},
        {"notification_uid": "ntf_missing", "success": True, "error": None},
        {"notification_uid": first, "success": True, "error": None},
    ]
    assert [n["is_read"] for n in _inbox(world)["notifications"]] == [True, True]
    world.api("POST", UNREAD, json={"notification_uids": [first]})
    assert [n["is_read"] for n in _inbox(world)["notifications"]] == [False, True]
    denied = world.api("POST", READ, headers=world.stranger, json={"notification_uids": [first]})
    assert denied.json()["results"][0] == {
        "notification_uid": first,
        "success": False,
        "error": "forbidden",
    }
    outsider = world.api("POST", READ, headers=late, json={"notification_uids": [first]})
    assert outsider.json()["results"][0]["error"] == "not_recipient"
    assert _inbox(world, headers=late)["notifications"] == []
    assert len(_inbox(world, headers=late, scope="team")["notifications"]) == 2


def test_a_resolved_notification_cannot_be_marked(world: World) -> None:
    run = _dispatch(world, "asks")
    advance(world, run["run_id"], "claim", "start", "block")
    (notice,) = _inbox(world)["notifications"]
    advance(world, run["run_id"], "unblock")
    answer = world.api("POST", READ, json={"notification_uids": [notice["uid"]]}).json()
    assert answer["results"][0]["error"] == "not_active"


def test_mutations_are_for_users_and_need_a_valid_list(world: World) -> None:
    agent = world.api("POST", READ, headers=world.agent, json={"notification_uids": ["x"]})
    assert agent.status_code == 403 and agent.json()["code"] == "forbidden"
    assert world.api("POST", UNREAD, headers=world.agent, json={}).status_code == 403
    for body in ({}, {"notification_uids": []}, {"notification_uids": ["x"] * 101}, []):
        bad = world.api("POST", READ, json=body)
        assert bad.status_code == 400, body
        assert "notification_uids" in bad.json()["detail"] or body == []
    assert world.api("POST", READ, headers={}, json={"notification_uids": ["x"]}).status_code == 401


def test_listing_filters_pages_and_rejects_bad_queries(world: World) -> None:
    for title in ("a", "b", "c"):
        advance(world, _dispatch(world, title)["run_id"], "claim", "start", "fail")
    first = _inbox(world, limit=2)
    assert len(first["notifications"]) == 2 and first["page_info"]["has_next_page"]
    rest = _inbox(world, limit=2, cursor=first["page_info"]["next_cursor"])
    assert len(rest["notifications"]) == 1 and rest["page_info"] == {
        "has_next_page": False,
        "next_cursor": None,
    }
    everything = [n["uid"] for n in first["notifications"] + rest["notifications"]]
    assert everything == [n["uid"] for n in _inbox(world)["notifications"]]
    # a cursor belongs to its listing
    other = world.api(
        "GET", INBOX, params={"scope": "team", "cursor": first["page_info"]["next_cursor"]}
    )
    assert other.status_code == 400 and "cursor" in other.json()["detail"]
    assert _inbox(world, factory_uid="fac_elsewhere")["notifications"] == []
    assert len(_inbox(world, factory_uid=world.factory_uid)["notifications"]) == 3
    assert _inbox(world, recipient_uid="user_other")["notifications"] == []
    assert len(_inbox(world, recipient_uid=world.user_uid)["notifications"]) == 3
    assert len(_inbox(world, scope="team", recipient_uid=world.user_uid)["notifications"]) == 3
    assert _inbox(world, scope="team", recipient_uid="user_other")["notifications"] == []
    assert _inbox(world, headers=world.stranger, scope="team")["notifications"] == []
    for params in ({"scope": "all"}, {"limit": "0"}, {"limit": "101"}, {"cursor": "forged"}):
        bad = world.api("GET", INBOX, params=params)
        assert bad.status_code == 400, params
        assert next(iter(params)) in bad.json()["detail"]
    mine_as_agent = world.api("GET", INBOX, headers=world.agent)
    assert mine_as_agent.status_code == 400 and "scope" in mine_as_agent.json()["detail"]
    assert world.api("GET", INBOX, headers={}).status_code == 401
    foreign = world.api("GET", INBOX, headers={**world.user, "X-Service-Team-Uid": "team_x"})
    assert foreign.status_code == 403


def test_a_removed_member_is_no_live_recipient(world: World) -> None:
    advance(world, _dispatch(world, "a")["run_id"], "claim", "start", "fail")

    async def leave(services: Services) -> None:
        from sqlalchemy import delete

        from gateway.foundation.store import tables as t

        async with services.database.transaction() as conn:
            await conn.execute(
                delete(t.team_members).where(t.team_members.c.user_uid == world.user_uid)
            )

    world.client.run(leave)
    assert _inbox(world, headers=world.agent, scope="team")["notifications"] == []


def test_webhook_work_without_a_foreman_notifies_until_one_is_set(world: World) -> None:
    base = f"/factory/{world.factory_uid}"
    hook = world.api("POST", f"{base}/webhooks", json={"name": "h"}).json()
    trigger = {"provider": "webhook", "event": "received", "filter": {"webhook_ids": [hook["uid"]]}}
    automation = {"name": "a", "prompt": "p", "triggers": [trigger]}
    assert world.api("POST", f"{base}/automations", json=automation).status_code == 201

    async def set_foreman(services: Services, agent_uid: str | None) -> None:
        async with services.database.transaction() as conn:
            await assign_foreman(conn, world.factory_uid, agent_uid)

    world.client.run(lambda services: set_foreman(services, None))
    auth = {"Authorization": f"Bearer {hook['secret']}"}
    for n in range(2):
        sent = world.client.post(f"/webhooks/w/{hook['uid']}", json={"n": n}, headers=auth)
        assert sent.status_code == 202, sent.text

    def evaluated() -> bool:
        listed = world.api("GET", f"{base}/webhooks/{hook['uid']}/deliveries").json()
        records = listed["deliveries"]
        # "failed": matched, but no run could start
        return len(records) == 2 and all(r["evaluation"] == "failed" for r in records)

    # both deliveries evaluated (in one batch or two), so the count below means something
    eventually(evaluated)
    found = _inbox(world)["notifications"]
    assert [n["kind"] for n in found] == ["dispatch_failed"]  # one notice, not one per delivery
    assert "foreman" in found[0]["detail"]
    world.client.run(lambda services: set_foreman(services, world.agent_uid))
    assert _inbox(world)["notifications"] == []
    # a foreman set while the evaluator holds a batch it planned without one: that batch
    # makes no new notice (tests/domain/test_inbox_dispatch_notice.py)
