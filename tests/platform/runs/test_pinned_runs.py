"""workerHost routes every kind of run (docs/runs-and-tasks.md#pinned-runs-self-hosted-workers):
a factory whose files pin their runs to a self-hosted worker that has not registered yet; its
webhook automation's runs, its dispatched runs, runs naming its agents and the runs its inline
schedule and stage trigger start wait for that worker,
say so, and are claimed by it alone; a run whose worker never comes fails after
GATEWAY_WORKER_WAIT_S as worker_unavailable. SQLite and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.runs.record.unclaimed import fail_unclaimed
from gateway.platform.schedules.scheduler import start_due
from tests.conftest import make_settings
from tests.platform.factory_files.support import applied, set_secrets
from tests.platform.factory_files.trees import automation as automation_file
from tests.platform.factory_files.trees import minimal, webhook, webhook_trigger
from tests.platform.runners.test_runner_api import Runner
from tests.support import GatewayClient, World, eventually

WAIT_S = 1.5


def _pinned_tree(world: World, worker: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    set_secrets(world, {"hook-token": "t0ken"})
    tree = minimal("pinned", {"webhooks/inbox.yaml": webhook("hook-token")})
    (hook,) = applied(world, tree)["webhooks"]
    tree["factory.yaml"] += f"  workerHost: {worker}\n"  # under agentDefaults
    tree["automations/triage/automation.md"] = automation_file(
        webhook_trigger(hook["uid"]), "Triage it."
    )
    tree["automations/nightly/automation.md"] = automation_file(
        "  - provider: schedule\n    event: cron_fired\n    schedule:\n      cron: '0 9 * * *'\n",
        "Report.",
    )
    tree["automations/review/automation.md"] = automation_file(
        "  - provider: factory\n    event: work_item_stage_changed\n    filter:\n"
        "      stages: [IN_REVIEW]\n",
        "Review.",
    )
    factory_uid = applied(world, tree)["factory_uid"]
    agents = world.api("GET", f"/agent/identities?factory_uid={factory_uid}").json()["agents"]
    return factory_uid, hook, {agent["name"]: agent["uid"] for agent in agents}


def _delivery_run(world: World, factory_uid: str, hook: dict[str, Any]) -> str:
    accepted = world.client.post(
        f"/webhooks/w/{hook['uid']}", content=b"{}", headers={"Authorization": "Bearer t0ken"}
    )
    assert accepted.status_code == 202, accepted.text
    path = f"/factory/{factory_uid}/webhooks/{hook['uid']}/deliveries/"
    record = eventually(
        lambda: (
            (r := world.api("GET", path + accepted.json()["delivery_id"]).json()).get("runs") and r
        )
    )
    run_id: str = record["runs"][0]["run_id"]
    return run_id


def _runs_of_every_kind(world: World, worker: str) -> list[str]:
    factory_uid, hook, agents = _pinned_tree(world, worker)
    delivered = _delivery_run(world, factory_uid, hook)
    dispatched = world.api("POST", f"/factory/{factory_uid}/runs", json={"prompt": "Fix."})
    assert dispatched.status_code in (200, 201), dispatched.text
    named = world.api(
        "POST", "/agent/runs", json={"prompt": "Go.", "agent_identity_uid": agents["boss"]}
    )
    assert named.status_code in (200, 201), named.text
    scheduled = _automation_run(world, factory_uid, "nightly", _due)
    staged = _automation_run(world, factory_uid, "review", _moved)
    return [delivered, dispatched.json()["run_id"], named.json()["run_id"], scheduled, staged]


def _due(world: World, factory_uid: str) -> None:
    """The inline schedule of the tree's `nightly` automation has a due slot, started here (or
    by the scheduler's own tick if it comes first)."""

    async def due(services: Services) -> None:
        a, s = t.automations, t.automation_schedules
        async with services.database.transaction() as conn:
            mine = (a.c.name == "nightly", a.c.factory_uid == factory_uid)
            uid = (await conn.execute(select(a.c.uid).where(*mine))).scalar_one()
            slot = (utcnow() - timedelta(minutes=1)).replace(second=0, microsecond=0)
            await conn.execute(update(s).where(s.c.automation_uid == uid).values(next_run_at=slot))
        await start_due(services.database)

    world.client.run(due)


def _moved(world: World, factory_uid: str) -> None:
    """A task of the factory (the delivery's) moves to IN_REVIEW: the `review` automation's
    stage trigger fires."""
    task = world.api("GET", f"/factory/{factory_uid}/tasks").json()["tasks"][0]
    moved = world.api(
        "PATCH", f"/factory/{factory_uid}/tasks/{task['uid']}", json={"stage": "IN_REVIEW"}
    )
    assert moved.status_code == 200, moved.text


def _automation_run(
    world: World, factory_uid: str, name: str, start: Callable[[World, str], None]
) -> str:
    """The run `start` makes the tree's automation `name` start within the platform."""

    async def started(services: Services) -> str | None:
        async with services.database.read() as conn:
            r = t.runs
            query = select(r.c.run_id).where(
                r.c.source == "AUTOMATION", r.c.factory_uid == factory_uid, r.c.title == name
            )
            found: str | None = (await conn.execute(query)).scalar_one_or_none()
        return found

    start(world, factory_uid)
    run_id: str = eventually(lambda: world.client.run(started))
    return run_id


def test_runs_of_every_source_wait_for_their_worker_and_go_to_it_alone(world: World) -> None:
    run_ids = _runs_of_every_kind(world, "box-7")
    for run_id in run_ids:
        run = world.api("GET", f"/agent/runs/{run_id}").json()
        assert run["state"] == "QUEUED" and run["agent_config"]["worker_host"] == "box-7"
        assert run["status_message"]["error_code"] == "waiting_for_worker"
        assert "gateway runner --worker-id box-7" in run["status_message"]["message"]

    assert Runner(world).claim(10) == []  # the pool takes none of them
    assert Runner(world, worker_id="box-8").claim(10) == []
    box = Runner(world, worker_id="box-7")
    claimed = box.claim(10)
    assert sorted(run["run_id"] for run in claimed) == sorted(run_ids)
    assert all(run["agent_config"]["worker_host"] == "box-7" for run in claimed)
    held = world.api("GET", f"/agent/runs/{run_ids[0]}").json()
    assert held["state"] == "CLAIMED" and "status_message" not in held

    # a follow-up to a run the worker ended queues it again: for the worker alone, as it was
    run_id = run_ids[2]
    box.on(run_id, "progress", state="INPROGRESS")
    box.on(run_id, "finish", outcome="SUCCEEDED")
    before = world.api("GET", f"/agent/runs/{run_id}").json()["agent_config"]
    followup = world.api("POST", f"/agent/runs/{run_id}/followups", json={"message": "again"})
    assert followup.status_code == 200, followup.text
    assert Runner(world).claim(10) == []
    assert [run["run_id"] for run in box.claim(10)] == [run_id]
    assert world.api("GET", f"/agent/runs/{run_id}").json()["agent_config"] == before


@pytest.fixture
def short_wait(database_url: str) -> Iterator[World]:
    settings = make_settings(database_url, worker_wait_s=str(WAIT_S), scheduler_poll_s="0.2")
    with GatewayClient.running(settings) as client:
        yield World.create(client)


def test_a_run_whose_worker_never_comes_fails_after_the_wait(short_wait: World) -> None:
    world = short_wait
    run_ids = _runs_of_every_kind(world, "box-gone")
    started = time.monotonic()

    def failed() -> list[dict[str, Any]] | None:
        runs = [world.api("GET", f"/agent/runs/{run_id}").json() for run_id in run_ids]
        return runs if all(run["state"] == "FAILED" for run in runs) else None

    runs = eventually(failed, timeout=60)
    assert time.monotonic() - started >= WAIT_S * 0.5  # not at once: after the wait
    for run in runs:
        message = run["status_message"]
        assert message["error_code"] == "worker_unavailable" and message["retryable"] is True
        assert "box-gone" in message["message"] and "GATEWAY_WORKER_WAIT_S" in message["message"]
    timeline = world.api("GET", f"/agent/runs/{run_ids[0]}/timeline").json()["events"]
    assert [event["state"] for event in timeline] == ["QUEUED", "FAILED"]


def test_a_worker_that_is_there_keeps_its_runs_waiting(world: World) -> None:
    run_ids = _runs_of_every_kind(world, "box-busy")
    Runner(world, worker_id="box-busy")  # a runner of that worker id, seen now
    two_hours_ago = utcnow() - timedelta(hours=2)

    def sweep(**backdated: Any) -> list[str]:
        async def go(services: Services) -> list[str]:
            async with services.database.transaction() as conn:
                await conn.execute(
                    update(t.runs)
                    .where(t.runs.c.run_id.in_(run_ids))
                    .values(updated_at=two_hours_ago)
                )
                if backdated:
                    await conn.execute(update(t.runners).values(**backdated))
                return await fail_unclaimed(conn, 3600)

        failed: list[str] = world.client.run(go)
        return failed

    assert sweep() == []  # waited two hours, but its worker is there (busy)
    states = {world.api("GET", f"/agent/runs/{r}").json()["state"] for r in run_ids}
    assert states == {"QUEUED"}
    # the same wait with the worker last seen two hours ago: it is gone, its runs fail
    assert sorted(sweep(last_seen_at=two_hours_ago)) == sorted(run_ids)
    states = {world.api("GET", f"/agent/runs/{r}").json()["state"] for r in run_ids}
    assert states == {"FAILED"}
