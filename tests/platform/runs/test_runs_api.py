from __future__ import annotations

from datetime import datetime

from tests.platform.runs.runs_support import advance, insert_raw_run, new_run
from tests.support import World


def test_create_and_get_run(world: World) -> None:
    created = world.api(
        "POST",
        "/agent/runs",
        json={
            "prompt": "Fix the bug",
            "title": "Bug",
            "config": {"name": "fixer", "model_id": "gpt-5"},
        },
    )
    assert created.status_code == 200
    body = created.json()
    assert body["task_id"] == body["run_id"] and body["state"] == "QUEUED"
    run = world.api("GET", f"/agent/runs/{body['run_id']}").json()
    assert run["prompt"] == "Fix the bug" and run["title"] == "Bug"
    assert run["agent_config"] == {"name": "fixer", "model_id": "gpt-5"}
    assert run["creator"]["uid"] == world.user_uid and run["creator"]["type"] == "user"
    assert run["source"] == "API" and run["is_run_type_cancellable"] is True
    assert run["created_at"].endswith("Z") and datetime.fromisoformat(run["created_at"])
    assert "started_at" not in run and "parent_run_id" not in run
    agent_run = new_run(world, headers=world.agent)
    assert agent_run["creator"]["type"] == "service_account"


def test_create_rejects_bad_bodies(world: World) -> None:
    for body in (
        {},
        {"prompt": ""},
        {"prompt": 1},
        {"prompt": "x", "config": {"colour": "r"}},
        {"prompt": "x", "extra": 1},
        {"prompt": "x", "parent_run_id": "nope"},
    ):
        response = world.api("POST", "/agent/runs", json=body)
        assert response.status_code == 400, body
        assert response.headers["content-type"] == "application/problem+json"
    assert world.api("POST", "/agent/runs", json={"prompt": "x"}, headers={}).status_code == 401


def test_the_config_schema_has_the_domains_keys() -> None:
    from msgspec.structs import fields

    from gateway.platform.runs.record.models import AgentConfig

    keys = {"name", "model_id", "base_prompt", "environment_id", "worker_host", "skill_spec"}
    answers_only = set(AgentConfig.SERVICE_SET)  # resolved by the service, refused in requests
    assert answers_only == {
        *("agent_uid", "harness", "runner", "agent", "runner_config", "skills", "secrets"),
        *("repositories", "skill_documents"),
    }
    assert {f.name for f in fields(AgentConfig)} == {
        *keys,
        *("mcp_servers", "credential_strategy"),
        *answers_only,
    }


def test_config_keys_the_service_sets_are_refused_in_requests(world: World) -> None:
    for key, value in (
        ("runner", "small"),
        ("agent_uid", "agent_x"),
        ("harness", {"type": "oz", "model": "auto"}),
        ("agent", {"uid": "agent_x", "name": "x"}),
        ("secrets", ["DEPLOY_TOKEN"]),
        ("skills", ["conventions"]),
        ("runner_config", {"name": "small"}),
    ):
        response = world.api("POST", "/agent/runs", json={"prompt": "x", "config": {key: value}})
        assert response.status_code == 400, key
        assert response.json()["detail"].startswith(f"config.{key}"), response.json()["detail"]


def test_visibility_is_creator_or_team(world: World) -> None:
    run = new_run(world)
    assert world.api("GET", f"/agent/runs/{run['run_id']}", headers=world.agent).status_code == 200
    hidden = world.api("GET", f"/agent/runs/{run['run_id']}", headers=world.stranger)
    assert hidden.status_code == 404 and hidden.json()["code"] == "not_found"
    assert world.api("GET", "/agent/runs/nope").status_code == 404
    listed = world.api("GET", "/agent/runs", headers=world.stranger).json()
    assert run["run_id"] not in [r["run_id"] for r in listed["runs"]]


def test_list_filters_sort_and_cursor(world: World) -> None:
    first = new_run(world, title="alpha one", config={"name": "n1", "model_id": "gemini-2.5-pro"})
    second = new_run(world, title="beta two", config={"name": "n2"})
    third = new_run(world, title="alpha three")
    advance(world, second["run_id"], "claim", "start")

    def ids(**params: object) -> list[str]:
        response = world.api("GET", "/agent/runs", params=params)
        assert response.status_code == 200, response.text
        return [r["run_id"] for r in response.json()["runs"]]

    mine = {first["run_id"], second["run_id"], third["run_id"]}
    assert ids()[0] == second["run_id"]  # updated_at desc: the started run moved to the top
    assert ids(sort_by="created_at", sort_order="asc")[-1] == third["run_id"]
    assert ids(state="INPROGRESS") == [second["run_id"]]
    assert set(ids(state=["QUEUED", "INPROGRESS"])) == mine
    assert ids(name="n1") == [first["run_id"]] and ids(model_id="gemini-2.5-pro") == [
        first["run_id"]
    ]
    assert set(ids(q="ALPHA")) == {first["run_id"], third["run_id"]}
    assert set(ids(creator=world.user_uid)) == mine
    assert ids(source="webhook") == []
    assert set(ids(created_after=first["created_at"])) == {second["run_id"], third["run_id"]}
    assert ids(created_before=first["created_at"]) == []
    assert ids(updated_after=third["updated_at"]) == [second["run_id"]]
    page = world.api("GET", "/agent/runs", params={"limit": 2}).json()
    assert len(page["runs"]) == 2 and page["page_info"]["has_next_page"] is True
    cursor = page["page_info"]["next_cursor"]
    rest = world.api("GET", "/agent/runs", params={"limit": 2, "cursor": cursor}).json()
    seen = [r["run_id"] for r in page["runs"] + rest["runs"]]
    assert set(seen) == mine and len(seen) == 3 and rest["page_info"]["next_cursor"] is None
    other_sort = world.api("GET", "/agent/runs", params={"cursor": cursor, "sort_order": "asc"})
    assert other_sort.status_code == 400 and other_sort.json()["detail"].startswith("cursor")
    for bad in (
        {"state": "DONE"},
        {"limit": 0},
        {"limit": 101},
        {"sort_by": "title"},
        {"sort_order": "up"},
        {"created_after": "yesterday"},
        {"cursor": "x"},
    ):
        response = world.api("GET", "/agent/runs", params=bad)
        assert response.status_code == 400, bad
        assert response.json()["detail"].startswith(next(iter(bad)))


def test_run_tree_and_harness_transitions(world: World) -> None:
    root = new_run(world)
    child = new_run(world, parent_run_id=root["run_id"])
    assert child["parent_run_id"] == root["run_id"]
    assert child["conversation_id"] == root["conversation_id"]
    advance(world, root["run_id"], "claim", "start", session_id="s1", session_link="https://x/s1")
    run = world.api("GET", f"/agent/runs/{root['run_id']}").json()
    assert run["state"] == "INPROGRESS" and run["session_link"] == "https://x/s1"
    assert "started_at" in run
    advance(world, root["run_id"], "fail", message="tests failed", error_code="tests")
    run = world.api("GET", f"/agent/runs/{root['run_id']}").json()
    assert run["state"] == "FAILED"
    assert run["status_message"] == {
        "message": "tests failed",
        "error_code": "tests",
        "retryable": False,
    }


def test_cancel_rules(world: World) -> None:
    root = new_run(world)
    child = new_run(world, parent_run_id=root["run_id"])
    done_child = new_run(world, parent_run_id=root["run_id"])
    advance(world, done_child["run_id"], "claim", "start", "succeed")
    response = world.api("POST", f"/agent/runs/{root['run_id']}/cancel")
    assert response.status_code == 200 and response.text == root["run_id"]  # not JSON
    assert response.headers["content-type"].startswith("text/plain")
    state = {
        r: world.api("GET", f"/agent/runs/{r}").json()["state"]
        for r in (root["run_id"], child["run_id"], done_child["run_id"])
    }
    assert state == {
        root["run_id"]: "CANCELLED",
        child["run_id"]: "CANCELLED",
        done_child["run_id"]: "SUCCEEDED",
    }
    again = world.api("POST", f"/agent/runs/{root['run_id']}/cancel")
    assert again.status_code == 400 and again.json()["code"] == "run_terminal"
    pending = new_run(world)
    advance(world, pending["run_id"], "claim", "accept")
    response = world.api("POST", f"/agent/runs/{pending['run_id']}/cancel")
    assert response.status_code == 409 and response.json()["code"] == "run_pending"
    local = insert_raw_run(world, run_type="local")
    response = world.api("POST", f"/agent/runs/{local}/cancel")
    assert response.status_code == 422 and response.json()["code"] == "not_cancellable"
    assert world.api("GET", f"/agent/runs/{local}").json()["is_run_type_cancellable"] is False
    hidden = world.api("POST", f"/agent/runs/{pending['run_id']}/cancel", headers=world.stranger)
    assert hidden.status_code == 404


def test_followups_are_routed_by_state(world: World) -> None:
    run = new_run(world)
    path = f"/agent/runs/{run['run_id']}/followups"
    queued = world.api("POST", path, json={"message": "also this", "mode": "plan"}).json()
    assert queued == {"run_id": run["run_id"], "state": "QUEUED", "routing": "queued"}
    advance(world, run["run_id"], "claim", "start")
    assert world.api("POST", path, json={"message": "more"}).json()["routing"] == "injected"
    advance(world, run["run_id"], "block")
    unblocked = world.api("POST", path, json={"message": "answer"}).json()
    assert unblocked["routing"] == "injected" and unblocked["state"] == "INPROGRESS"
    advance(world, run["run_id"], "succeed")
    resumed = world.api("POST", path, json={"message": "again"}).json()
    assert resumed["routing"] == "resumed" and resumed["state"] == "QUEUED"
    assert world.api("GET", f"/agent/runs/{run['run_id']}").json()["state"] == "QUEUED"
    fail_setup(world, run["run_id"])
    debug = world.api("POST", path, json={"message": "why?"}).json()
    assert debug["routing"] == "debug" and debug["state"] == "FAILED"
    for bad in (
        {},
        {"message": ""},
        {"message": "x", "attachments": "a"},
        {"message": "x", "mode": 3},
    ):
        assert world.api("POST", path, json=bad).status_code == 400, bad
    unknown = world.api("POST", path, json={"message": "x", "attachments": ["att_nope"]})
    assert unknown.status_code == 422 and unknown.json()["code"] == "unknown_attachment"
    assert world.api("POST", path, json={"message": "x"}, headers=world.stranger).status_code == 404


def test_interrupt_only_live_cloud_runs(world: World) -> None:
    run = new_run(world)
    path = f"/agent/runs/{run['run_id']}/interrupt"
    response = world.api("POST", path)
    assert response.status_code == 409 and response.json()["code"] == "run_not_live"
    advance(world, run["run_id"], "claim")
    assert world.api("POST", path).status_code == 202
    advance(world, run["run_id"], "start")
    accepted = world.api("POST", path)
    assert accepted.status_code == 202 and accepted.json()["state"] == "INPROGRESS"
    assert world.api("GET", f"/agent/runs/{run['run_id']}").json()["state"] == "INPROGRESS"
    local = insert_raw_run(world, run_type="ci")
    assert world.api("POST", f"/agent/runs/{local}/interrupt").status_code == 409


def test_nul_characters_are_client_errors(world: World) -> None:
    """PostgreSQL text cannot hold NUL: every such input is a 400, never a 500."""
    task_by_run = f"/factory/{world.factory_uid}/task-by-run"
    for method, path, kwargs in (
        ("GET", "/agent/runs/%00", {}),
        ("POST", "/agent/runs", {"json": {"prompt": "a\u0000b"}}),
        ("GET", "/agent/runs", {"params": {"q": "a\u0000"}}),
        ("GET", task_by_run, {"params": {"run_id": "\u0000"}}),
        ("POST", "/agent/conversations/%00/followups", {"json": {"message": "x"}}),
    ):
        response = world.api(method, path, **kwargs)
        assert response.status_code == 400, (method, path)
        assert response.headers["content-type"] == "application/problem+json"


def test_odd_numbers_and_dates_are_client_errors(world: World) -> None:
    for params in (
        {"limit": "\u00b2"},
        {"created_after": "0001-01-01T00:00:00+05:00"},
        {"updated_after": "9999-12-31T23:59:59-05:00"},
    ):
        response = world.api("GET", "/agent/runs", params=params)
        assert response.status_code == 400, params
        assert response.json()["detail"].startswith(next(iter(params)))


def _shift_back(world: World, run_id: str, minutes: int) -> None:
    """Time travel: every moment recorded on the run moves `minutes` into the past."""
    from datetime import timedelta

    from sqlalchemy import select, update

    from gateway.foundation.services import Services
    from gateway.foundation.store import tables as t

    async def go(services: Services) -> None:
        r, delta = t.runs, timedelta(minutes=minutes)
        moments = ("created_at", "updated_at", "started_at", "failed_at")
        async with services.database.transaction() as conn:
            row = (await conn.execute(select(r).where(r.c.run_id == run_id))).one()
            values = {m: getattr(row, m) - delta for m in moments if getattr(row, m) is not None}
            await conn.execute(update(r).where(r.c.run_id == run_id).values(**values))

    world.client.run(go)


def fail_setup(world: World, run_id: str) -> None:
    """A runner that opens debug sessions claims the run and fails its environment set-up."""
    from tests.platform.runners.test_runner_api import Runner

    runner = Runner(world, debug_sessions=True)
    assert run_id in [claimed["run_id"] for claimed in runner.claim(50)]
    runner.on(run_id, "finish", outcome="FAILED", error_code="environment_setup_failed")


def test_debug_follow_ups_do_not_extend_the_debug_window(world: World) -> None:
    """The window is an hour from the failure: a debug follow-up 59 minutes after it updates the
    run, and one 2 minutes later (61 after the failure) resumes the run instead."""
    run = new_run(world)
    path = f"/agent/runs/{run['run_id']}/followups"
    fail_setup(world, run["run_id"])
    _shift_back(world, run["run_id"], 59)
    debug = world.api("POST", path, json={"message": "why?"}).json()
    assert debug["routing"] == "debug" and debug["state"] == "FAILED"
    _shift_back(world, run["run_id"], 2)
    late = world.api("POST", path, json={"message": "and now?"}).json()
    assert late["routing"] == "resumed" and late["state"] == "QUEUED"


def test_skill_specs_are_checked_and_name_the_run(world: World) -> None:
    for spec, name in (
        ("acme/tools:deploy", "deploy"),
        ("acme/tools:.claude/skills/review/SKILL.md", "review"),
    ):
        run = new_run(world, config={"skill_spec": spec})
        assert run["agent_config"] == {"skill_spec": spec, "name": name}
    named = new_run(world, config={"skill_spec": "acme/tools:deploy", "name": "mine"})
    assert named["agent_config"]["name"] == "mine"
    assert world.api("GET", "/agent/runs", params={"name": "review"}).json()["runs"]
    for spec in (
        "deploy",
        "acme/tools",
        "acme/tools:",
        "acme:deploy",
        "acme/tools:SKILL.md",
        "acme/tools:skills/deploy/README.md",
        "acme/tools:skills//SKILL.md",
        "acme/tools:../SKILL.md",
        "-acme/tools:deploy",
        "acme/tools:de ploy",
    ):
        response = world.api(
            "POST", "/agent/runs", json={"prompt": "p", "config": {"skill_spec": spec}}
        )
        assert response.status_code == 400, spec
        assert response.json()["detail"].startswith("config.skill_spec: "), spec
