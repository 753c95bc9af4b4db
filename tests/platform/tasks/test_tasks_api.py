from __future__ import annotations

import secrets
from typing import Any

from gateway.foundation.accounts import factories, identities
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.tasks import tasks
from tests.platform.runs.runs_support import advance, insert_raw_run, new_run
from tests.support import World


def _create(world: World, conversation_id: str, **body: Any) -> Any:
    return world.api(
        "POST",
        f"/factory/{world.factory_uid}/tasks",
        json={"title": "Task", "conversation_id": conversation_id, **body},
    )


def _task(world: World, **body: Any) -> dict[str, Any]:
    run = new_run(world)
    response = _create(world, run["conversation_id"], **body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _second_factory(world: World) -> str:
    async def go(services: Services) -> str:
        async with services.database.transaction() as conn:
            return await factories.create_factory(conn, world.team_uid, "F2", None, world.agent_uid)

    return world.client.run(go)


def test_create_binding_rules(world: World) -> None:
    run = new_run(world)
    created = _create(world, run["conversation_id"])
    assert created.status_code == 201
    task = created.json()
    assert task["stage"] == "TRIAGE" and task["factory_uid"] == world.factory_uid
    assert task["created_by"]["email"] is not None and task["description"] is None
    again = _create(world, run["conversation_id"])
    assert again.status_code == 409
    other = _second_factory(world)
    across = world.api(
        "POST",
        f"/factory/{other}/tasks",
        json={"title": "T", "conversation_id": run["conversation_id"]},
    )
    assert across.status_code == 409  # one live task per conversation, across factories
    assert _task(world, stage="TODO")["stage"] == "TODO"
    foreign = new_run(world, headers=world.stranger)
    for conversation, body in (
        ("nope", {}),
        (foreign["conversation_id"], {}),
        (run["conversation_id"], {"stage": "LATER"}),
        (run["conversation_id"], {"title": ""}),
    ):
        response = _create(world, conversation, **body)
        assert response.status_code == 400, (conversation, body)
    assert _create(world, "nope").json()["detail"].startswith("conversation_id")
    path = f"/factory/{world.factory_uid}/tasks"
    assert world.api("POST", path, json={"title": "x"}).status_code == 400
    assert world.api("POST", path, json={}, headers={}).status_code == 401
    assert world.api("POST", path, json={}, headers=world.stranger).status_code == 403
    assert world.api("POST", "/factory/fac_nope/tasks", json={}).status_code == 404


def test_get_patch_delete(world: World) -> None:
    task = _task(world)
    one = f"/factory/{world.factory_uid}/tasks/{task['uid']}"

    async def outputs(services: Services) -> None:
        async with services.database.transaction() as conn:
            await tasks.add_output(conn, task["uid"], "pull_request", "first", "https://x/1")
            await tasks.add_output(conn, task["uid"], "pull_request", "second", "https://x/2")

    world.client.run(outputs)
    got = world.api("GET", one).json()
    assert [o["title"] for o in got["outputs"]] == ["second", "first"]
    for stage in ("DONE", "TRIAGE", "IN_REVIEW"):  # any stage to any stage
        patched = world.api("PATCH", one, json={"stage": stage})
        assert patched.status_code == 200 and patched.json()["stage"] == stage
    patched = world.api("PATCH", one, json={"title": "New", "description": "d"}).json()
    assert (patched["title"], patched["description"]) == ("New", "d")
    for bad in ({}, {"stage": "NOPE"}, {"title": 1}, {"uid": "x"}, {"description": 5}):
        assert world.api("PATCH", one, json=bad).status_code == 400, bad
    assert world.api("GET", one, headers=world.stranger).status_code == 403
    assert world.api("GET", f"/factory/{world.factory_uid}/tasks/task_nope").status_code == 404
    assert world.api("DELETE", one).status_code == 204
    assert world.api("GET", one).status_code == 404
    assert world.api("DELETE", one).status_code == 404
    assert world.api("PATCH", one, json={"title": "x"}).status_code == 404
    assert _create(world, task["conversation_id"]).status_code == 201  # re-bindable


def test_list_filters_and_pagination(world: World) -> None:
    a = _task(world, stage="TODO")
    b = _task(world, stage="DONE")
    c = _task(world)
    a = world.api(
        "PATCH", f"/factory/{world.factory_uid}/tasks/{a['uid']}", json={"title": "Alpha"}
    ).json()
    path = f"/factory/{world.factory_uid}/tasks"

    def uids(**params: Any) -> list[str]:
        response = world.api("GET", path, params=params)
        assert response.status_code == 200, response.text
        return [task["uid"] for task in response.json()["tasks"]]

    assert uids() == [c["uid"], b["uid"], a["uid"]]  # created_at desc
    assert uids(sort_by="updated_at")[0] == a["uid"]
    assert uids(sort_order="asc") == [a["uid"], b["uid"], c["uid"]]
    assert set(uids(stage=["TODO", "DONE"])) == {a["uid"], b["uid"]}
    assert uids(q="alph") == [a["uid"]]
    email = a["created_by"]["email"]
    assert len(uids(created_by=[email, "x@y.z"])) == 3 and uids(created_by="x@y.z") == []
    assert uids(created_after=a["created_at"]) == [c["uid"], b["uid"]]
    assert uids(created_before=b["created_at"]) == [a["uid"]]
    assert uids(updated_after=c["updated_at"]) == [a["uid"]]
    lean = world.api("GET", path).json()["tasks"][0]
    assert "outputs" not in lean and "current_run" not in lean and "ticket_id" not in lean
    rich = world.api(
        "GET", path, params={"full_list": "true", "include_current_run": "true"}
    ).json()["tasks"][0]
    assert rich["outputs"] == [] and "ticket_source" in rich
    assert rich["current_run"]["conversation_id"] == c["conversation_id"]
    page = world.api("GET", path, params={"limit": 2}).json()
    cursor = page["page_info"]["next_cursor"]
    assert page["page_info"]["has_next_page"] is True
    rest = world.api("GET", path, params={"limit": 2, "cursor": cursor}).json()
    assert [t["uid"] for t in rest["tasks"]] == [a["uid"]]
    assert rest["page_info"] == {"has_next_page": False, "next_cursor": None}
    for bad in (
        {"cursor": cursor, "sort_by": "updated_at"},
        {"cursor": "forged"},
        {"stage": "LATER"},
        {"limit": 0},
        {"limit": 101},
        {"sort_by": "title"},
        {"sort_order": "sideways"},
        {"created_after": "soon"},
        {"full_list": "maybe"},
        {"include_current_run": "2"},
    ):
        response = world.api("GET", path, params=bad)
        assert response.status_code == 400, bad
        assert response.json()["detail"].startswith(
            next(k for k in bad if k != "sort_by" or len(bad) == 1)
        )
    assert world.api("GET", path, headers=world.stranger).status_code == 403
    assert world.api("GET", path, headers={}).status_code == 401
    assert world.api("GET", "/factory/fac_nope/tasks").status_code == 404


def test_cancel_task_rules(world: World) -> None:
    run = new_run(world)
    child = new_run(world, parent_run_id=run["run_id"])
    task = _create(world, run["conversation_id"]).json()
    cancel = f"/factory/{world.factory_uid}/tasks/{task['uid']}/cancel"
    advance(world, run["run_id"], "claim", "start")
    response = world.api("POST", cancel)
    assert response.status_code == 200
    body = response.json()
    assert body["stage"] == "CANCELLED" and body["current_run"]["state"] == "CANCELLED"
    assert world.api("GET", f"/agent/runs/{child['run_id']}").json()["state"] == "CANCELLED"
    again = world.api("POST", cancel)
    assert again.status_code == 400 and again.json()["code"] == "run_terminal"

    pending = new_run(world)
    advance(world, pending["run_id"], "claim", "accept")
    pending_task = _create(world, pending["conversation_id"]).json()
    path = f"/factory/{world.factory_uid}/tasks/{pending_task['uid']}/cancel"
    assert world.api("POST", path).status_code == 409

    local = insert_raw_run(world, run_type="local")
    conversation = world.api("GET", f"/agent/runs/{local}").json()["conversation_id"]
    local_task = _create(world, conversation).json()
    path = f"/factory/{world.factory_uid}/tasks/{local_task['uid']}/cancel"
    assert world.api("POST", path).status_code == 422

    assert world.api("POST", cancel, headers=world.stranger).status_code == 403
    assert world.api("POST", cancel, headers={}).status_code == 401
    missing = f"/factory/{world.factory_uid}/tasks/task_nope/cancel"
    assert world.api("POST", missing).status_code == 404


def test_cancel_task_without_current_run_or_access(world: World) -> None:
    async def orphan(services: Services) -> str:
        uid, now = f"task_{secrets.token_hex(8)}", utcnow()
        async with services.database.transaction() as conn:
            await conn.execute(
                t.tasks.insert().values(
                    uid=uid,
                    factory_uid=world.factory_uid,
                    title="orphan",
                    stage="TRIAGE",
                    conversation_id=f"conv_{secrets.token_hex(8)}",  # its runs were purged
                    created_at=now,
                    updated_at=now,
                )
            )
        return uid

    uid = world.client.run(orphan)
    response = world.api("POST", f"/factory/{world.factory_uid}/tasks/{uid}/cancel")
    assert response.status_code == 404 and response.json()["detail"].startswith("task")

    # a member of both teams continues the conversation from the other team: the factory's
    # team sees the task, not that newest run
    async def bridge(services: Services) -> str:
        email = f"b{secrets.token_hex(4)}@example.com"
        async with services.database.transaction() as conn:
            await identities.create_user(conn, world.other_team_uid, email)
            _, key = await identities.create_user(conn, world.team_uid, email)
        return key

    key = world.client.run(bridge)
    both = {"Authorization": f"Bearer {key}", "X-Service-Team-Uid": world.other_team_uid}
    run = new_run(world)
    task = _create(world, run["conversation_id"]).json()
    new_run(world, headers=both, conversation_id=run["conversation_id"])
    response = world.api("POST", f"/factory/{world.factory_uid}/tasks/{task['uid']}/cancel")
    assert response.status_code == 403


def test_task_lookups(world: World) -> None:
    run = new_run(world)
    child = new_run(world, parent_run_id=run["run_id"])
    task = _create(world, run["conversation_id"]).json()
    base = f"/factory/{world.factory_uid}"
    by_conv = world.api(
        "GET", f"{base}/task-by-conversation", params={"conversation_id": run["conversation_id"]}
    )
    assert by_conv.status_code == 200 and by_conv.json()["uid"] == task["uid"]
    by_run = world.api("GET", f"{base}/task-by-run", params={"run_id": child["run_id"]})
    assert by_run.status_code == 200 and by_run.json()["uid"] == task["uid"]
    assert world.api("GET", f"{base}/task-by-conversation").status_code == 400
    assert world.api("GET", f"{base}/task-by-run").status_code == 400
    other = _second_factory(world)
    for path, params in (
        (f"/factory/{other}/task-by-conversation", {"conversation_id": run["conversation_id"]}),
        (f"/factory/{other}/task-by-run", {"run_id": run["run_id"]}),
        (f"{base}/task-by-run", {"run_id": "nope"}),
        (f"{base}/task-by-conversation", {"conversation_id": "nope"}),
    ):
        assert world.api("GET", path, params=params).status_code == 404, path
    params = {"run_id": run["run_id"]}
    assert (
        world.api("GET", f"{base}/task-by-run", params=params, headers=world.stranger).status_code
        == 403
    )
    world.api("DELETE", f"{base}/tasks/{task['uid']}")
    assert world.api("GET", f"{base}/task-by-run", params=params).status_code == 404


def test_every_task_endpoint_needs_credentials_and_factory_access(world: World) -> None:
    task = _task(world)
    base = f"/factory/{world.factory_uid}"
    one = f"{base}/tasks/{task['uid']}"
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("POST", f"{base}/tasks", {"json": {"title": "t", "conversation_id": "c"}}),
        ("GET", f"{base}/tasks", {}),
        ("GET", one, {}),
        ("PATCH", one, {"json": {"title": "x"}}),
        ("DELETE", one, {}),
        ("POST", f"{one}/cancel", {}),
        ("GET", f"{base}/task-by-conversation", {"params": {"conversation_id": "c"}}),
        ("GET", f"{base}/task-by-run", {"params": {"run_id": "r"}}),
    ]
    for method, path, kwargs in calls:
        assert world.api(method, path, headers={}, **kwargs).status_code == 401, path
        denied = world.api(method, path, headers=world.stranger, **kwargs)
        assert denied.status_code == 403 and denied.json()["code"] == "forbidden", path
        missing = world.api(method, path.replace(world.factory_uid, "fac_nope"), **kwargs)
        assert missing.status_code == 404, path
    assert world.api("GET", one).status_code == 200  # nothing above changed the task


def test_another_teams_conversation_answers_as_an_unknown_one(world: World) -> None:
    """Creating a task must not reveal that another team's conversation exists."""
    foreign = new_run(world, headers=world.stranger)["conversation_id"]
    unknown = "0192a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    answers = [_create(world, conversation) for conversation in (foreign, unknown)]
    assert [a.status_code for a in answers] == [400, 400]
    assert answers[0].headers["content-type"] == answers[1].headers["content-type"]
    assert answers[0].json() == {
        **answers[1].json(),
        "detail": answers[1].json()["detail"].replace(unknown, foreign),
    }
