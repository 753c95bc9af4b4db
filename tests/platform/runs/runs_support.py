"""Helpers of the runs, tasks, dispatch and conversation API tests: the harness hook and
direct store access for states the API cannot produce on its own."""

from __future__ import annotations

from typing import Any

from gateway.accounts.identities import Principal
from gateway.platform.runs import lifecycle as run_lifecycle
from gateway.platform.runs.records import NewRun, insert_run
from gateway.services import Services
from tests.support import World


def advance(world: World, run_id: str, *events: str, **kwargs: Any) -> None:
    """Moves a run through harness events (claim, start, succeed, fail, ...)."""

    async def go(services: Services) -> None:
        async with services.database.transaction() as conn:
            for event in events:
                await run_lifecycle.advance(conn, run_id, event, **kwargs)

    world.client.run(go)


def insert_raw_run(world: World, *, run_type: str = "cloud", team_uid: str | None = None) -> str:
    """A run of a type the API does not create (local, CI), owned by the world's team."""

    async def go(services: Services) -> str:
        creator = Principal("user", world.user_uid, "u", None, frozenset({world.team_uid}))
        new = NewRun(
            prompt="p", team_uid=team_uid or world.team_uid, creator=creator, run_type=run_type
        )
        async with services.database.transaction() as conn:
            return str((await insert_run(conn, new)).run_id)

    return world.client.run(go)


def new_run(world: World, headers: dict[str, str] | None = None, **body: Any) -> dict[str, Any]:
    """POST /agent/runs, then GET the created run."""
    created = world.api("POST", "/agent/runs", headers=headers, json={"prompt": "do it", **body})
    assert created.status_code == 200, created.text
    run: dict[str, Any] = world.api(
        "GET", f"/agent/runs/{created.json()['run_id']}", headers=headers
    ).json()
    return run
