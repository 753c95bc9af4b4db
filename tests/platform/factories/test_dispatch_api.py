from __future__ import annotations

import asyncio
import time
from typing import Any

from sqlalchemy import select

from gateway.foundation.accounts import factories
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from tests.support import World, scaled


def _task_by_run(world: World, run_id: str) -> Any:
    """task-by-run, polled briefly: the task is created after the dispatch response."""
    deadline = time.monotonic() + scaled(5)
    while True:
        response = world.api(
            "GET", f"/factory/{world.factory_uid}/task-by-run", params={"run_id": run_id}
        )
        if response.status_code != 404 or time.monotonic() > deadline:
            return response
        time.sleep(0.05)


def test_dispatch_creates_run_then_task(world: World) -> None:
    response = world.api(
        "POST",
        f"/factory/{world.factory_uid}/runs",
        json={
            "prompt": "Ship it\nwith care",
            "ticket_ref": "owner/repo#12",
            "ticket_url": "https://example.test/owner/repo/issues/12",
        },
    )
    assert response.status_code == 201, response.text
    run = response.json()
    assert run["state"] == "QUEUED" and run["task_id"] == run["run_id"]
    assert run["creator"]["uid"] == world.user_uid and run["source"] == "API"

    async def bound_in_background(services: Services) -> bool:
        # without any lookup: the step spawned after the response binds the task
        for _ in range(100):
            async with services.database.read() as conn:
                query = select(t.tasks.c.uid).where(
                    t.tasks.c.conversation_id == run["conversation_id"]
                )
                if (await conn.execute(query)).first() is not None:
                    return True
            await asyncio.sleep(0.05)
        return False

    assert world.client.run(bound_in_background)
    task = _task_by_run(world, run["run_id"])
    assert task.status_code == 200, task.text
    body = task.json()
    assert body["conversation_id"] == run["conversation_id"] and body["stage"] == "TRIAGE"
    assert body["title"] == "Ship it" and body["created_by"]["uid"] == world.user_uid
    listed = world.api(
        "GET", f"/factory/{world.factory_uid}/tasks", params={"full_list": "true"}
    ).json()["tasks"]
    assert [(t["ticket_source"], t["ticket_id"]) for t in listed] == [
        ("repository_issue", "owner/repo#12")
    ]


def test_dispatch_errors(world: World) -> None:
    path = f"/factory/{world.factory_uid}/runs"
    for body, field in (
        ({}, "prompt"),
        ({"prompt": ""}, "prompt"),
        ({"prompt": "x", "ticket_ref": "bad ref!"}, "ticket_ref"),
        ({"prompt": "x", "ticket_ref": "x" * 201}, "ticket_ref"),
        ({"prompt": "x", "ticket_url": "ftp://x"}, "ticket_url"),
        ({"prompt": "x", "title": 3}, "title"),
    ):
        response = world.api("POST", path, json=body)
        assert response.status_code == 400, body
        assert response.json()["detail"].startswith(field)
    assert world.api("POST", path, json={"prompt": "x"}, headers={}).status_code == 401
    assert world.api("POST", path, json={"prompt": "x"}, headers=world.stranger).status_code == 403
    assert world.api("POST", "/factory/fac_nope/runs", json={"prompt": "x"}).status_code == 404

    async def lonely(services: Services) -> str:
        async with services.database.transaction() as conn:
            return await factories.create_factory(conn, world.team_uid, "Lonely", None, None)

    uid = world.client.run(lonely)
    response = world.api("POST", f"/factory/{uid}/runs", json={"prompt": "x"})
    assert response.status_code == 409 and response.json()["code"] == "no_foreman"
