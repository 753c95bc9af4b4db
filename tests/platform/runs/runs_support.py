"""Helpers of the runs, tasks, dispatch and conversation API tests: runs moved through the
product's own transitions (a runner of the run's team, driven by the runner protocol's rules),
and direct store access for runs the API does not create."""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.services import Services
from gateway.platform.runners import claims, finish, leases, registry, reports
from gateway.platform.runners.models import RunEnding
from gateway.platform.runners.registry import Runner
from gateway.platform.runs.creation.new_runs import NewRun, insert_run
from gateway.platform.runs.record.store import load_run
from tests.support import World

# the runner protocol's steps a test may take a run through, each one call of its rules
PROGRESS: dict[str, Literal["PENDING", "INPROGRESS", "BLOCKED"]] = {
    "accept": "PENDING",
    "start": "INPROGRESS",
    "block": "BLOCKED",
    "unblock": "INPROGRESS",
}
OUTCOMES: dict[str, Literal["SUCCEEDED", "FAILED", "ERROR"]] = {
    "succeed": "SUCCEEDED",
    "fail": "FAILED",
    "error": "ERROR",
}


def advance(world: World, run_id: str, *events: str, **kwargs: Any) -> None:
    """Moves a run through runner events, in order, as a runner of its team would: `claim`
    (it takes the run), `accept` (not started yet), `start`, `block`, `unblock`, `succeed`,
    `fail`, `error`, `release`. Each is the runner protocol's own rule (runners/claims.py,
    reports.py, finish.py, leases.py), which asks the product's state table: an event the product
    refuses in the run's state fails the test. `kwargs`: session_id and session_link (with
    `start`), message and error_code (with an ending)."""

    async def go(services: Services) -> None:
        lease_s = services.settings.run_lease_s
        async with services.database.transaction() as conn:
            for event in events:
                runner = await _runner(conn, world, run_id, event)
                if event == "claim":
                    claimed = await claims.claim_runs(conn, runner, [run_id], lease_s)
                    assert [c.run_id for c in claimed] == [run_id], "not a QUEUED run"
                else:
                    await _report(conn, runner, run_id, event, kwargs)

    world.client.run(go)


async def _runner(conn: AsyncConnection, world: World, run_id: str, event: str) -> Runner:
    """A new runner of the run's team for a claim, else the runner holding the run."""
    run = await load_run(conn, run_id)
    team = frozenset({run.team_uid or ""})
    principal = Principal("agent", world.agent_uid, "Foreman", None, team)
    if event == "claim":
        return await registry.register(
            conn, principal, name="tests", host=None, factory_uid=None, concurrency=1, version=None
        )
    assert run.runner_uid is not None, f"{event}: no runner holds the {run.state} run"
    return await registry.runner_of(conn, principal, run.runner_uid)


async def _report(
    conn: AsyncConnection, runner: Runner, run_id: str, event: str, kwargs: dict[str, Any]
) -> None:
    if event in PROGRESS:
        await reports.progress(
            conn,
            runner,
            run_id,
            state=PROGRESS[event],
            status_message=None,
            session_id=kwargs.get("session_id"),
            session_link=kwargs.get("session_link"),
        )
    elif event in OUTCOMES:
        ending = RunEnding(
            outcome=OUTCOMES[event],
            status_message=kwargs.get("message"),
            error_code=kwargs.get("error_code"),
        )
        await finish.finish(conn, runner, run_id, ending, lambda run: f"https://t.test/{run}")
    else:
        assert event == "release", f"{event}: not a runner event"
        await leases.release(conn, runner, run_id, kwargs.get("message") or "given back")


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


def upload(world: World, prepared: dict[str, Any], content: bytes = b"log line\n") -> Any:
    """PUTs `content` to a prepared attachment's upload URL (no credentials: the URL is one)."""
    target = prepared["upload"]
    answer = world.client.request(
        target["method"], target["url"], content=content, headers=target["headers"]
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def prepare_uploaded(world: World, path: str, *names: str) -> list[str]:
    """Attachment ids prepared at `path` (.../attachments/prepare), each uploaded."""
    files = [{"name": name, "content_type": "text/plain"} for name in names]
    prepared = world.api("POST", path, json={"files": files} if files else None)
    assert prepared.status_code == 200, prepared.text
    attachments = prepared.json()["attachments"]
    for attachment in attachments:
        upload(world, attachment)
    return [attachment["attachment_id"] for attachment in attachments]
