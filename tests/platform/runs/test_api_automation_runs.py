"""Automations made by the API carry their agent's configuration like file ones
(docs/runs-and-tasks.md#what-a-run-carries): an automation given `agent_uid` starts runs that
agent executes, with its configuration (`agent_config`) and pinned to its worker host, whatever
starts them (a webhook delivery, a provider delivery, an inline schedule, a task's stage
change); one without an agent runs as the factory's foreman, with the foreman's configuration.
The configuration is the agent's when each run is made. SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import orjson
from sqlalchemy import select, update

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.schedules.scheduler import start_due
from tests.connections import signing
from tests.connections.provider_world import automation, connect, deliver, evaluated, runs, trigger
from tests.platform.runners.test_runner_api import Runner
from tests.platform.tasks.test_tasks_api import _task
from tests.providers.conftest import fixture
from tests.support import World, eventually

LINEAR_SECRET = "lin_wh_0123456789abcdef"
WORKER = "box-9"


def _agent(world: World) -> str:
    made = world.api(
        "POST",
        "/agent/identities",
        json={
            "name": "helper",
            "prompt": "You help. Helper prompt.",
            "base_model": "auto-genius",
            "worker_host": WORKER,
        },
    )
    assert made.status_code == 201, made.text
    uid: str = made.json()["uid"]
    return uid


def _bound(world: World, name: str, agent_uid: str | None, *triggers: dict[str, Any]) -> str:
    body: dict[str, Any] = {"name": name, "prompt": f"Do {name}.", "triggers": list(triggers)}
    if agent_uid is not None:
        body["agent_uid"] = agent_uid
    made = world.api("POST", f"/factory/{world.factory_uid}/automations", json=body)
    assert made.status_code == 201, made.text
    assert made.json().get("agent_uid") == agent_uid
    uid: str = made.json()["uid"]
    return uid


def _webhook_run(world: World, automation_uids: set[str]) -> dict[str, str]:
    """automation uid -> the run one delivery to the webhook started for it."""
    hook_uid, secret = HOOK[world.factory_uid]
    body = orjson.dumps({"n": next(_SENT)})  # a body of its own: not a duplicate
    sent = world.client.post(
        f"/webhooks/w/{hook_uid}", content=body, headers={"Authorization": f"Bearer {secret}"}
    )
    assert sent.status_code == 202, sent.text
    delivery_id = sent.json()["delivery_id"]
    found = eventually(
        lambda: (
            (rows := runs(world.client, delivery_id)) and len(rows) == len(automation_uids) and rows
        )
    )
    return {row.automation_uid: row.run_id for row in found}


_SENT = itertools.count()
HOOK: dict[str, tuple[str, str]] = {}  # factory uid -> (webhook uid, its token), per test


def _hook(world: World) -> str:
    made = world.api("POST", f"/factory/{world.factory_uid}/webhooks", json={"name": "inbox"})
    assert made.status_code == 201, made.text
    HOOK[world.factory_uid] = (made.json()["uid"], made.json()["secret"])
    uid: str = made.json()["uid"]
    return uid


def _scheduled_run(world: World, automation_uid: str) -> str:
    async def due(services: Services) -> None:
        s = t.automation_schedules
        slot = (utcnow() - timedelta(minutes=1)).replace(second=0, microsecond=0)
        async with services.database.transaction() as conn:
            await conn.execute(
                update(s).where(s.c.automation_uid == automation_uid).values(next_run_at=slot)
            )
        await start_due(services.database)

    async def started(services: Services) -> str | None:
        r = t.runs
        query = select(r.c.run_id).where(
            r.c.source == "AUTOMATION", r.c.metadata["automation_id"].as_string() == automation_uid
        )
        async with services.database.read() as conn:
            found: str | None = (await conn.execute(query)).scalars().first()
        return found

    world.client.run(due)
    run_id: str = eventually(lambda: world.client.run(started))
    return run_id


def _stage_run(world: World, automation_uid: str) -> str:
    task = _task(world)
    moved = world.api(
        "PATCH", f"/factory/{world.factory_uid}/tasks/{task['uid']}", json={"stage": "IN_REVIEW"}
    )
    assert moved.status_code == 200, moved.text

    async def started(services: Services) -> str | None:
        r = t.runs
        query = select(r.c.run_id, r.c.metadata).where(
            r.c.conversation_id == task["conversation_id"], r.c.source == "AUTOMATION"
        )
        async with services.database.read() as conn:
            for row in await conn.execute(query):
                if row.metadata["automation_id"] == automation_uid:
                    return str(row.run_id)
        return None

    run_id: str = eventually(lambda: world.client.run(started))
    return run_id


def _provider_run(world: World, automation_uid: str) -> str:
    connection = connect(world, "linear", secret=LINEAR_SECRET)
    payload = fixture("linear", "issue_update_labeled_assigned")
    payload.pop("webhookTimestamp")
    delivery_id = deliver(world.client, connection, signing.linear(LINEAR_SECRET, payload))
    evaluated(world, connection, delivery_id)
    (row,) = [r for r in runs(world.client, delivery_id) if r.automation_uid == automation_uid]
    run_id: str = row.run_id
    return run_id


def test_api_automations_runs_carry_their_agents_configuration_and_worker(world: World) -> None:
    box = Runner(world, worker_id=WORKER)  # a worker the agent may be pinned to
    helper = _agent(world)
    hook = _hook(world)
    on_hook = trigger("webhook", "received", webhook_ids=[hook])
    bound = _bound(world, "bound", helper, on_hook)
    unbound = _bound(world, "unbound", None, on_hook)
    linear = _bound(world, "linear", helper, trigger("linear", "issue_assigned"))
    nightly = _bound(
        world,
        "nightly",
        helper,
        {"provider": "schedule", "event": "cron_fired", "schedule": {"cron": "0 9 * * *"}},
    )
    staged = _bound(
        world, "staged", helper, trigger("factory", "work_item_stage_changed", stages=["IN_REVIEW"])
    )

    delivered = _webhook_run(world, {bound, unbound})
    pinned = {
        "webhook": delivered[bound],
        "provider": _provider_run(world, linear),
        "schedule": _scheduled_run(world, nightly),
        "stage": _stage_run(world, staged),
    }
    for source, run_id in pinned.items():
        run = world.api("GET", f"/agent/runs/{run_id}").json()
        config = run["agent_config"]
        assert config is not None, source
        assert config["agent"] == {"uid": helper, "name": "helper"}, source
        assert config["base_prompt"] == "You help. Helper prompt.", source
        assert config["model_id"] == "auto-genius" and config["worker_host"] == WORKER, source

    # the automation without an agent runs as the foreman, with the foreman's configuration
    foreman_run = world.api("GET", f"/agent/runs/{delivered[unbound]}").json()
    assert foreman_run["agent_config"]["agent"]["uid"] == world.agent_uid
    assert "worker_host" not in foreman_run["agent_config"]

    # worker routing: the pool's runner takes the foreman's run, never a pinned one
    pool = Runner(world)
    taken = {run["run_id"] for run in pool.claim(50)}
    assert delivered[unbound] in taken and not taken & set(pinned.values())
    held = {run["run_id"] for run in box.claim(50)}
    assert held == set(pinned.values())

    # a later change of the agent reaches the runs made after it, not those made before
    changed = world.api("PUT", f"/agent/identities/{helper}", json={"prompt": "Second."})
    assert changed.status_code == 200, changed.text
    again = _webhook_run(world, {bound, unbound})
    assert (
        world.api("GET", f"/agent/runs/{again[bound]}").json()["agent_config"]["base_prompt"]
        == "Second."
    )
    before = world.api("GET", f"/agent/runs/{pinned['webhook']}").json()["agent_config"]
    assert before["base_prompt"] == "You help. Helper prompt."


def test_an_automations_agent_is_checked_and_can_be_changed(world: World) -> None:
    helper = _agent_without_worker(world)
    hook = _hook(world)
    on_hook = trigger("webhook", "received", webhook_ids=[hook])
    body = {"name": "x", "prompt": "Do x.", "triggers": [on_hook], "agent_uid": "agent_nope"}
    refused = world.api("POST", f"/factory/{world.factory_uid}/automations", json=body)
    assert refused.status_code == 400 and "agent_uid" in refused.json()["detail"]
    uid = automation(world, world.factory_uid, "later", on_hook)
    path = f"/factory/{world.factory_uid}/automations/{uid}"
    assert world.api("PATCH", path, json={"agent_uid": helper}).json()["agent_uid"] == helper
    run_id = _webhook_run(world, {uid})[uid]
    assert (
        world.api("GET", f"/agent/runs/{run_id}").json()["agent_config"]["agent"]["uid"] == helper
    )
    back = world.api("PATCH", path, json={"agent_uid": None}).json()
    assert "agent_uid" not in back


def _agent_without_worker(world: World) -> str:
    made = world.api("POST", "/agent/identities", json={"name": "plain", "prompt": "Plain."})
    assert made.status_code == 201, made.text
    uid: str = made.json()["uid"]
    return uid
