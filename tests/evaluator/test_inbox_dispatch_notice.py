"""The "no foreman" notice of webhook work against a foreman set while the evaluator holds a
batch it planned without one (the batch is planned before its write transaction): the notice the
foreman resolved must not come back. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import orjson
from sqlalchemy import select

from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.platform.factories.foreman import set_foreman
from gateway.platform.run_start import PLATFORM
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.evaluator.delivery_runs import AcceptedDelivery, RunBatch, RunStarter
from tests.evaluator.test_runs_automation_starter import _automation, _trigger, _webhook
from tests.support import GatewayClient, World


async def _planned_without_foreman(
    services: Services, world: World, delivery_id: str
) -> tuple[DeliveryRecord, RunBatch]:
    """A delivery matching an automation of the world's factory, planned while the factory has
    no foreman."""
    hook = await _webhook(services, world.factory_uid, world.team_uid, "h")
    await _automation(services, world.factory_uid, "a", [_trigger(hook)])
    async with services.database.transaction() as conn:
        await set_foreman(conn, world.factory_uid, None)
    payload = orjson.dumps({"n": 1})
    record = DeliveryRecord(
        delivery_id, hook, datetime.now(UTC), len(payload), Label.ACCEPTED, payload=payload
    )
    accepted = AcceptedDelivery(delivery_id, hook, record.received_at, payload)
    async with services.database.read() as conn:
        planned = await RunStarter(PLATFORM).plan(conn, [accepted])
    return record, planned


async def _write(services: Services, record: DeliveryRecord, planned: RunBatch) -> None:
    async with services.database.transaction() as conn:
        claimed = await delivery_log.log_new(conn, delivery_log.prepare_log(conn.dialect, [record]))
        assert await planned.write(conn, claimed) == []  # no foreman when planned: no run


async def _active_notices(services: Services, factory_uid: str) -> int:
    n = t.inbox_notifications
    query = select(n.c.uid).where(
        n.c.factory_uid == factory_uid, n.c.kind == "dispatch_failed", n.c.resolved_at.is_(None)
    )
    async with services.database.read() as conn:
        return len((await conn.execute(query)).all())


def test_a_batch_planned_without_a_foreman_notifies_while_there_is_none(
    client: GatewayClient,
) -> None:
    world = World.create(client)

    async def scenario(services: Services) -> int:
        record, planned = await _planned_without_foreman(services, world, "dlv_race_none")
        await _write(services, record, planned)
        return await _active_notices(services, world.factory_uid)

    assert client.run(scenario) == 1


def test_a_foreman_set_after_planning_keeps_the_notice_resolved(client: GatewayClient) -> None:
    world = World.create(client)

    async def scenario(services: Services) -> int:
        record, planned = await _planned_without_foreman(services, world, "dlv_race_after")
        async with services.database.transaction() as conn:
            await set_foreman(conn, world.factory_uid, world.agent_uid)
        await _write(services, record, planned)
        return await _active_notices(services, world.factory_uid)

    assert client.run(scenario) == 0


def test_a_foreman_being_set_while_the_batch_is_written_keeps_the_notice_resolved(
    client: GatewayClient,
) -> None:
    """The foreman's transaction holds the factory row while the batch's transaction starts:
    the batch waits for it and then sees the foreman (SQLite: the writers take turns)."""
    world = World.create(client)

    async def scenario(services: Services) -> int:
        record, planned = await _planned_without_foreman(services, world, "dlv_race_during")
        async with services.database.transaction() as conn:
            await set_foreman(conn, world.factory_uid, world.agent_uid)
            writing = asyncio.create_task(_write(services, record, planned))
            await asyncio.sleep(0.3)  # the batch's transaction reaches the factory row
        await writing
        return await _active_notices(services, world.factory_uid)

    assert client.run(scenario) == 0
