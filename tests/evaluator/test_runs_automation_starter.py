"""RunStarter: accepted deliveries -> factory runs, on SQLite and PostgreSQL.

`evaluate` does what the delivery consumer does with a batch: plan on a read connection, then
claim the deliveries in the log and write the runs in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
import orjson
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts import factories
from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.platform.run_start import PLATFORM
from gateway.webhook_gateway.automations import management as automations
from gateway.webhook_gateway.automations import source_rows
from gateway.webhook_gateway.automations.models import AutomationCreate, AutomationPatch
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.evaluator.delivery_runs import (
    AcceptedDelivery,
    RunBatch,
    RunRef,
    RunStarter,
)
from gateway.webhook_gateway.webhooks import management as webhooks
from gateway.webhook_gateway.webhooks.models import WebhookCreate, WebhookPatch
from tests.connections.provider_world import automation, connect, set_repositories, trigger
from tests.support import GatewayClient, World


def _trigger(webhook_uid: str, payload: Any = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"webhook_ids": [webhook_uid]}
    if payload is not None:
        spec["payload"] = payload
    return {"provider": "webhook", "event": "received", "filter": spec}


async def _webhook(services: Services, factory_uid: str, team_uid: str, name: str) -> str:
    async with services.database.transaction() as conn:
        created = await webhooks.create_webhook(
            conn, services, factory_uid, team_uid, WebhookCreate(name=name)
        )
    return created.uid


async def _automation(
    services: Services, factory_uid: str, name: str, triggers: list[Any], enabled: bool = True
) -> str:
    body = {"name": name, "prompt": f"Prompt of {name}.", "enabled": enabled, "triggers": triggers}
    async with services.database.transaction() as conn:
        made = await automations.create_automation(
            conn, factory_uid, msgspec.convert(body, AutomationCreate)
        )
    return made.uid


def _delivery(webhook_uid: str, delivery_id: str, payload: bytes) -> AcceptedDelivery:
    return AcceptedDelivery(delivery_id, webhook_uid, datetime.now(UTC), payload)


async def log_and_write(
    conn: AsyncConnection, planned: RunBatch, batch: Sequence[AcceptedDelivery]
) -> None:
    """The consumer's transaction for `batch`: its deliveries logged, then the rows `planned`
    for those it claimed."""
    records = [
        DeliveryRecord(
            d.delivery_id, d.webhook_uid, d.received_at, len(d.payload), Label.ACCEPTED,
            payload=d.payload,
        )
        for d in batch
    ]  # fmt: skip
    claimed = await delivery_log.log_new(conn, delivery_log.prepare_log(conn.dialect, records))
    await planned.write(conn, claimed)


async def evaluate(
    services: Services, starter: RunStarter, batch: list[AcceptedDelivery]
) -> dict[str, list[RunRef]]:
    """Evaluates `batch` as the consumer does; the runs each delivery has (in match order)."""
    async with services.database.read() as conn:
        planned = await starter.plan(conn, batch)
    async with services.database.transaction() as conn:
        await log_and_write(conn, planned, batch)
    r = t.runs
    query = (
        select(r.c.delivery_id, r.c.automation_uid, r.c.run_id)
        .where(r.c.delivery_id.in_([d.delivery_id for d in batch]))
        .order_by(r.c.created_at)
    )
    refs: dict[str, list[RunRef]] = {}
    async with services.database.read() as conn:
        for row in await conn.execute(query):
            refs.setdefault(row.delivery_id, []).append(RunRef(row.automation_uid, row.run_id))
    return refs


async def _start(
    services: Services, starter: RunStarter, delivery: AcceptedDelivery
) -> list[RunRef]:
    return (await evaluate(services, starter, [delivery])).get(delivery.delivery_id, [])


async def _count(services: Services, table: Any, *where: Any) -> int:
    """Rows of `table` matching `where` (the PostgreSQL database is shared by the session)."""
    async with services.database.read() as conn:
        query = select(func.count()).select_from(table).where(*where)
        return int((await conn.execute(query)).scalar_one())


def test_matching_idempotency_and_envelope(client: GatewayClient) -> None:
    world = World.create(client)

    async def scenario(services: Services) -> None:
        hook = await _webhook(services, world.factory_uid, world.team_uid, "GitHub events")
        opened = await _automation(
            services, world.factory_uid, "opened", [_trigger(hook, {"action": ["opened"]})]
        )
        anything = await _automation(services, world.factory_uid, "anything", [_trigger(hook)])
        await _automation(
            services, world.factory_uid, "closed", [_trigger(hook, {"action": ["closed"]})]
        )
        await _automation(services, world.factory_uid, "off", [_trigger(hook)], enabled=False)
        starter = RunStarter(PLATFORM)
        body = orjson.dumps({"action": "opened", "number": 7})
        refs = await _start(services, starter, _delivery(hook, "dlv_1", body))
        assert sorted(r.automation_uid for r in refs) == sorted([opened, anything])
        assert len({r.run_id for r in refs}) == 2
        # again (a redelivered stream entry): nothing new, the same refs
        assert await _start(services, starter, _delivery(hook, "dlv_1", body)) == refs
        assert await _count(services, t.runs, t.runs.c.factory_uid == world.factory_uid) == 2
        assert starter.compilations == 1  # the matcher was reused

        async with services.database.read() as conn:
            run = (
                await conn.execute(select(t.runs).where(t.runs.c.run_id == refs[0].run_id))
            ).one()
            stored = (
                await conn.execute(
                    select(t.attachments).where(t.attachments.c.run_id == run.run_id)
                )
            ).one()
            logged = (
                await conn.execute(
                    select(t.deliveries.c.payload).where(t.deliveries.c.delivery_id == "dlv_1")
                )
            ).scalar_one()
        assert run.source == "WEBHOOK" and run.state == "QUEUED"
        assert run.factory_uid == world.factory_uid and run.team_uid == world.team_uid
        assert run.creator_uid is None
        assert run.metadata == {
            "automation_id": refs[0].automation_uid,
            "webhook_uid": hook,
            "delivery_id": "dlv_1",
        }
        first = "opened" if refs[0].automation_uid == opened else "anything"
        assert run.prompt.startswith(f"Prompt of {first}.")
        for needle in ("GitHub events", hook, "dlv_1", "event-payload.json", "untrusted"):
            assert needle in run.prompt
        assert "number" not in run.prompt  # the payload travels as an attachment only
        assert run.artifacts == [
            {
                "artifact_type": "FILE",
                "created_at": run.created_at.isoformat(),
                "data": {
                    "artifact_uid": stored.attachment_id,
                    "filename": "event-payload.json",
                    "filepath": "event-payload.json",
                    "mime_type": "application/json",
                    "size_bytes": len(body),
                },
            }
        ]
        # the payload is stored once, in the delivery log, and the attachment points at it
        assert stored.content is None and stored.delivery_id == "dlv_1"
        assert logged == body and stored.size == len(body)

        # non-object body: only the automation without a payload filter fires
        refs2 = await _start(services, starter, _delivery(hook, "dlv_2", b"[1, 2]"))
        assert [r.automation_uid for r in refs2] == [anything]

        # each run has its factory task at once (a webhook run is already asynchronous)
        assert await _count(services, t.tasks, t.tasks.c.factory_uid == world.factory_uid) == 3

    client.run(scenario)


def test_disabled_or_deleted_webhooks_and_no_foreman(client: GatewayClient) -> None:
    world = World.create(client)

    async def scenario(services: Services) -> None:
        off = await _webhook(services, world.factory_uid, world.team_uid, "off")
        gone = await _webhook(services, world.factory_uid, world.team_uid, "gone")
        await _automation(services, world.factory_uid, "a", [_trigger(off), _trigger(gone)])
        async with services.database.transaction() as conn:
            await webhooks.update_webhook(
                conn, services, world.factory_uid, off, WebhookPatch(enabled=False)
            )
            await webhooks.delete_webhook(conn, services, world.factory_uid, gone)
            lonely = await factories.create_factory(conn, world.team_uid, "No foreman", None, None)
        lonely_hook = await _webhook(services, lonely, world.team_uid, "lonely")
        await _automation(services, lonely, "b", [_trigger(lonely_hook)])
        starter = RunStarter(PLATFORM)
        for hook in (off, gone, lonely_hook):
            assert await _start(services, starter, _delivery(hook, f"d_{hook}", b"{}")) == []
        hooks = (off, gone, lonely_hook)
        keys = [f"d_{hook}" for hook in hooks]
        assert await _count(services, t.runs, t.runs.c.delivery_id.in_(keys)) == 0
        assert await _count(services, t.runs, t.runs.c.team_uid == world.team_uid) == 0

    client.run(scenario)


def test_a_renamed_webhooks_next_run_names_it_by_its_new_name(client: GatewayClient) -> None:
    """The starter keeps each source's envelope text across batches: a rename is not served
    the old one."""
    world = World.create(client)

    async def prompt(services: Services, run_id: str) -> str:
        async with services.database.read() as conn:
            query = select(t.runs.c.prompt).where(t.runs.c.run_id == run_id)
            return str((await conn.execute(query)).scalar_one())

    async def scenario(services: Services) -> None:
        hook = await _webhook(services, world.factory_uid, world.team_uid, "Old name")
        await _automation(services, world.factory_uid, "a", [_trigger(hook)])
        starter = RunStarter(PLATFORM)
        [before] = await _start(services, starter, _delivery(hook, "d_before", b"{}"))
        async with services.database.transaction() as conn:
            patch = WebhookPatch(name="New name")
            await webhooks.update_webhook(conn, services, world.factory_uid, hook, patch)
        [after] = await _start(services, starter, _delivery(hook, "d_after", b"{}"))
        assert 'webhook "Old name"' in await prompt(services, before.run_id)
        renamed = await prompt(services, after.run_id)
        assert 'webhook "New name"' in renamed and "Old name" not in renamed
        assert "d_after" in renamed and "d_before" not in renamed

    client.run(scenario)


def test_changed_automation_is_recompiled(client: GatewayClient) -> None:
    world = World.create(client)

    async def scenario(services: Services) -> None:
        hook = await _webhook(services, world.factory_uid, world.team_uid, "h")
        uid = await _automation(services, world.factory_uid, "a", [_trigger(hook, {"x": [1]})])
        starter = RunStarter(PLATFORM)
        assert await _start(services, starter, _delivery(hook, "d1", b'{"x": 2}')) == []
        async with services.database.transaction() as conn:
            patch = msgspec.convert({"triggers": [_trigger(hook, {"x": [2]})]}, AutomationPatch)
            await automations.update_automation(conn, world.factory_uid, uid, patch)
        refs = await _start(services, starter, _delivery(hook, "d2", b'{"x": 2}'))
        assert [r.automation_uid for r in refs] == [uid]
        assert starter.compilations == 2

    client.run(scenario)


def test_concurrent_evaluators_start_one_run(client: GatewayClient) -> None:
    world = World.create(client)

    async def scenario(services: Services) -> None:
        import asyncio

        hook = await _webhook(services, world.factory_uid, world.team_uid, "h")
        await _automation(services, world.factory_uid, "a", [_trigger(hook)])
        delivery = _delivery(hook, f"race_{hook}", b"{}")
        results = await asyncio.gather(
            *(_start(services, RunStarter(PLATFORM), delivery) for _ in range(4))
        )
        assert all(refs == results[0] and len(refs) == 1 for refs in results)
        runs = t.runs.c.factory_uid == world.factory_uid
        assert await _count(services, t.runs, runs) == 1

    client.run(scenario)


def test_a_webhook_run_has_its_task_at_once(client: GatewayClient) -> None:
    world = World.create(client)

    async def scenario(services: Services) -> None:
        hook = await _webhook(services, world.factory_uid, world.team_uid, "h")
        await _automation(services, world.factory_uid, "a", [_trigger(hook)])
        refs = await _start(services, RunStarter(PLATFORM), _delivery(hook, f"b_{hook}", b"{}"))
        runs = select(t.runs).where(t.runs.c.run_id == refs[0].run_id)
        async with services.database.read() as conn:
            run = (await conn.execute(runs)).one()
            bound = t.tasks.c.conversation_id == run.conversation_id
            task = (await conn.execute(select(t.tasks).where(bound))).one()
        assert not run.task_pending
        assert task.title == "a" and task.stage == "TRIAGE" and task.created_by_uid is None
        assert task.factory_uid == world.factory_uid and task.deleted_at is None

    client.run(scenario)


def test_warm_up_compiles_the_teams_of_live_provider_connections(client: GatewayClient) -> None:
    """A team's provider triggers are compiled from all its automations: at start, not at the
    first delivery of one of its connections."""
    world = World.create(client)
    automation(world, world.factory_uid, "triage", trigger("github", "issue_labeled"))
    first, second = connect(world, "github")["uid"], connect(world, "github")["uid"]
    idle = World.create(client)  # a team whose only connection is disabled: not compiled
    automation(idle, idle.factory_uid, "triage", trigger("github", "issue_labeled"))
    off = connect(idle, "github")["uid"]
    patched = idle.api("PATCH", f"/provider-connections/{off}", json={"enabled": False})
    assert patched.status_code == 200, patched.text

    async def scenario(services: Services) -> None:
        index = RunStarter(PLATFORM).index
        warmed = await index.warm_up(services.database)
        assert warmed.teams >= 1  # the store may hold other tests' teams
        assert index.cached(min(first, second)) and not index.cached(off)
        compiled = index.compilations
        async with services.database.read() as conn:
            found = await index.lookup(conn, [first, second])
        assert set(found.live) == {first, second}
        assert index.compilations == compiled  # both found their team's triggers compiled

    client.run(scenario)


def test_a_teams_provider_triggers_are_read_without_its_webhook_automations(
    client: GatewayClient,
) -> None:
    """Compiling a team's provider triggers reads its automations that have a trigger other than
    a webhook's (a webhook-only one is not read at all), and the aliases of all its factories
    with an enabled automation, whatever their automations listen to."""
    world = World.create(client)
    set_repositories(client, world.factory_uid, "Codertocat/Hello-World")  # GitHub's routes
    github = automation(world, world.factory_uid, "github", trigger("github", "issue_labeled"))
    connection = connect(world, "github")["uid"]

    async def scenario(services: Services) -> None:
        factory, team = world.factory_uid, world.team_uid
        hook = await _webhook(services, factory, team, "h")
        mixed = await _automation(
            services, factory, "mixed", [_trigger(hook), trigger("github", "issue_created")]
        )
        await _automation(services, factory, "webhook only", [_trigger(hook)])
        async with services.database.transaction() as conn:
            other = await factories.create_factory(conn, team, "B", "fb", world.agent_uid)
        other_hook = await _webhook(services, other, team, "h2")
        await _automation(services, other, "its webhook", [_trigger(other_hook)])

        a = t.automations
        async with services.database.read() as conn:
            read = {
                uid for _team, uid in await conn.execute(source_rows._team_query([team], a.c.uid))
            }
            (source,) = (await source_rows.live_sources(conn, [connection], {})).values()
            found = (await source_rows.compiled(conn, [source]))[team]
        assert read == {github, mixed}
        assert {row.uid for row in found.triggers} == {github, mixed}
        assert found.aliases == {factory: "fa", other: "fb"}

    client.run(scenario)


def test_warm_up_compiles_live_webhooks_before_their_first_delivery(client: GatewayClient) -> None:
    world = World.create(client)

    async def scenario(services: Services) -> None:
        factory, team = world.factory_uid, world.team_uid
        live = await _webhook(services, factory, team, "live")
        off = await _webhook(services, factory, team, "off")
        gone = await _webhook(services, factory, team, "gone")
        opened = await _automation(
            services, factory, "opened", [_trigger(live, {"action": ["opened"]})]
        )
        await _automation(services, factory, "off", [_trigger(off), _trigger(gone)])
        async with services.database.transaction() as conn:
            await webhooks.update_webhook(conn, services, factory, off, WebhookPatch(enabled=False))
            await webhooks.delete_webhook(conn, services, factory, gone)

        starter = RunStarter(PLATFORM)
        assert (await starter.index.warm_up(services.database)).webhooks >= 1
        index = starter.index
        assert index.cached(live) and not index.cached(off) and not index.cached(gone)
        compiled = starter.compilations
        body = orjson.dumps({"action": "opened"})
        refs = await _start(services, starter, _delivery(live, "dlv_warm", body))
        assert [r.automation_uid for r in refs] == [opened]
        assert starter.compilations == compiled  # nothing left to compile at the first delivery

    client.run(scenario)
