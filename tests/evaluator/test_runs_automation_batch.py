"""A consumer batch: planned once, written in a few statements, idempotent."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
from sqlalchemy import select

from gateway.foundation.accounts import factories
from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.platform.run_start import PLATFORM
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.evaluator.delivery_runs import AcceptedDelivery, RunStarter
from gateway.webhook_gateway.webhooks import management as webhooks
from tests.evaluator.test_runs_automation_starter import _automation, _trigger, _webhook
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
            await webhooks.delete_webhook(conn, services, world.factory_uid, gone)
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
        starter = RunStarter(PLATFORM)
        batch = [
            AcceptedDelivery(r.delivery_id, r.webhook_uid, r.received_at, r.payload or b"")
            for r in records
        ]
        async with services.database.read() as conn:
            planned = await starter.plan(conn, batch)
        async with services.database.transaction() as conn:
            claimed = await delivery_log.log_new(
                conn, delivery_log.prepare_log(conn.dialect, records)
            )
            started = await planned.write(conn, claimed)
        assert len(claimed) == 5 and len(started) == 4
        r = t.runs
        query = select(r.c.delivery_id, r.c.automation_uid, r.c.run_id).where(
            r.c.delivery_id.like(f"{prefix}%")
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
            tasks = (
                await conn.execute(
                    select(t.tasks).where(
                        t.tasks.c.conversation_id.in_([run.conversation_id for run in runs])
                    )
                )
            ).all()
        assert set(pairs) == {
            (f"{prefix}_1", on_a),
            (f"{prefix}_1", both),
            (f"{prefix}_2", both),
            (f"{prefix}_3", both),
        }
        assert {(s.automation_uid, s.run_id) for s in started} == {
            (a, run) for (_, a), run in pairs.items()
        }
        assert len(runs) == len(files) == len(tasks) == 4
        by_run = {f.run_id: f for f in files}
        for run in runs:
            delivery_id = run.metadata["delivery_id"]
            assert pairs[(delivery_id, run.metadata["automation_id"])] == run.run_id
            assert (run.delivery_id, run.automation_uid) == (
                delivery_id,
                run.metadata["automation_id"],
            )
            stored_file = by_run[run.run_id]
            assert run.artifacts[0]["data"]["artifact_uid"] == stored_file.attachment_id
            assert stored_file.conversation_id == run.conversation_id
            assert stored_file.delivery_id == delivery_id and stored_file.content is None
            assert run.source == "WEBHOOK" and not run.task_pending
            assert delivery_id in run.prompt
        # the first delivery's two runs keep the match order (automation creation order)
        first = sorted((run.created_at, run.automation_uid) for run in runs
                       if run.delivery_id == f"{prefix}_1")  # fmt: skip
        assert [uid for _, uid in first] == [on_a, both]

        # the batch again (the deliveries are logged: nothing is claimed, nothing starts)
        async with services.database.read() as conn:
            planned = await starter.plan(conn, batch)
        async with services.database.transaction() as conn:
            assert (
                await delivery_log.log_new(conn, delivery_log.prepare_log(conn.dialect, records))
                == set()
            )
            assert await planned.write(conn, set()) == []
        async with services.database.read() as conn:
            again = {(r.delivery_id, r.automation_uid): r.run_id for r in await conn.execute(query)}
        assert again == pairs
        assert starter.compilations == 3  # a, b, lonely: compiled once, then reused

    client.run(scenario)
