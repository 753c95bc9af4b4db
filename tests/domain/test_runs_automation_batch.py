"""RunStarter.start_batch via deliveries.store_records: a consumer batch in a few statements."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
from sqlalchemy import select

from gateway.backends.base import DeliveryRecord, Label
from gateway.domain import deliveries, factories, webhooks
from gateway.domain.automation_runs import AcceptedDelivery, RunStarter
from gateway.services import Services
from gateway.store import tables as t
from tests.domain.test_runs_automation_starter import _automation, _trigger, _webhook
from tests.support import GatewayClient, World


def _record(webhook_uid: str, delivery_id: str, body: object) -> DeliveryRecord:
    payload = orjson.dumps(body)
    return DeliveryRecord(
        delivery_id, webhook_uid, datetime.now(UTC), len(payload), Label.ACCEPTED, payload=payload
    )


def test_batch_matches_skips_and_is_idempotent(client: GatewayClient) -> None:
    world = World.create(client)

    async def scenario(services: Services) -> None:
        a = await _webhook(services, world.factory_uid, world.team_uid, "a")
        b = await _webhook(services, world.factory_uid, world.team_uid, "b")
        gone = await _webhook(services, world.factory_uid, world.team_uid, "gone")
        on_a = await _automation(
            services, world.factory_uid, "on a", [_trigger(a, {"kind": ["x"]})]
        )
        both = await _automation(services, world.factory_uid, "both", [_trigger(a), _trigger(b)])
        await _automation(services, world.factory_uid, "gone", [_trigger(gone)])
        async with services.database.transaction() as conn:
            await webhooks.delete_webhook(conn, world.factory_uid, gone)
            lonely = await factories.create_factory(conn, world.team_uid, "No foreman", None, None)
        lonely_hook = await _webhook(services, lonely, world.team_uid, "lonely")
        await _automation(services, lonely, "lonely", [_trigger(lonely_hook)])
        prefix = f"bt_{a}"
        records = [
            _record(a, f"{prefix}_1", {"kind": "x"}),  # on a + both
            _record(a, f"{prefix}_2", {"kind": "y"}),  # both
            _record(b, f"{prefix}_3", {"kind": "x"}),  # both
            _record(gone, f"{prefix}_4", {}),  # deleted webhook: nothing
            _record(lonely_hook, f"{prefix}_5", {}),  # no foreman: nothing
            _record(a, f"{prefix}_1", {"kind": "x"}),  # the same delivery twice in a batch
        ]
        starter = RunStarter(services)
        async with services.database.transaction() as conn:
            stored = await deliveries.store_records(conn, services, records, starter)
        assert len(stored) == 5
        ar = t.automation_runs
        query = select(ar.c.delivery_id, ar.c.automation_uid, ar.c.run_id).where(
            ar.c.delivery_id.like(f"{prefix}%")
        )
        async with services.database.read() as conn:
            pairs = {(r.delivery_id, r.automation_uid): r.run_id for r in await conn.execute(query)}
            runs = (
                await conn.execute(select(t.runs).where(t.runs.c.run_id.in_(pairs.values())))
            ).all()
            files = (
                await conn.execute(
                    select(t.attachments).where(t.attachments.c.run_id.in_(pairs.values()))
                )
            ).all()
        assert set(pairs) == {
            (f"{prefix}_1", on_a),
            (f"{prefix}_1", both),
            (f"{prefix}_2", both),
            (f"{prefix}_3", both),
        }
        assert len(runs) == len(files) == 4
        by_run = {f.run_id: f for f in files}
        for run in runs:
            delivery_id = run.metadata["delivery_id"]
            assert pairs[(delivery_id, run.metadata["automation_id"])] == run.run_id
            stored_file = by_run[run.run_id]
            assert run.artifacts[0]["attachment_id"] == stored_file.attachment_id
            assert stored_file.conversation_id == run.conversation_id
            assert orjson.loads(stored_file.content) == orjson.loads(
                next(r.payload for r in records if r.delivery_id == delivery_id) or b""
            )
            assert run.source == "WEBHOOK" and run.task_pending
            assert delivery_id in run.prompt

        # the batch again (the deliveries are logged: nothing new), then straight to the starter
        async with services.database.transaction() as conn:
            assert await deliveries.store_records(conn, services, records, starter) == []
            refs = await starter.start_batch(
                conn,
                [
                    AcceptedDelivery(r.delivery_id, r.webhook_uid, r.received_at, r.payload or b"")
                    for r in records
                ],
            )
        again = {(d, ref.automation_uid): ref.run_id for d, got in refs.items() for ref in got}
        assert again == pairs
        assert starter.compilations == 3  # a, b, lonely: compiled once, then reused

    client.run(scenario)
