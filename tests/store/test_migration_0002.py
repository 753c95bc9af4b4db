"""Migration 0002 on a store with data: runs keep their (delivery, automation) key, deliveries
queued in the old outbox are in the log as pending, evaluated ones as evaluated."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from sqlalchemy import text

from gateway.foundation.store import create_database, migrate
from tests.conftest import make_settings
from tests.store.migration_support import upgrade_to

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def test_0002_moves_runs_keys_and_the_outbox_into_the_log(fresh_store: str) -> None:
    url = make_settings(fresh_store).database_url

    async def run() -> dict[str, object]:
        database = create_database(url)
        try:
            await upgrade_to(database, "0001")
            uid = f"mig{id(database)}"
            stamp = NOW.replace(tzinfo=None) if database.is_sqlite else NOW
            async with database.transaction() as conn:
                await conn.execute(
                    text(
                        "INSERT INTO runs (run_id, conversation_id, root_run_id, prompt, state, "
                        "source, run_type, created_at, updated_at, task_pending) VALUES "
                        "(:r, :c, :r, 'p', 'QUEUED', 'WEBHOOK', 'cloud', :t, :t, false)"
                    ),
                    {"r": f"run-{uid}", "c": f"conv-{uid}", "t": stamp},
                )
                await conn.execute(
                    text(
                        "INSERT INTO automation_runs (delivery_id, automation_uid, run_id, "
                        "created_at) VALUES (:d, :a, :r, :t)"
                    ),
                    {"d": f"dlv-a-{uid}", "a": f"auto-{uid}", "r": f"run-{uid}", "t": stamp},
                )
                for table, delivery in (("deliveries", "a"), ("ingress_outbox", "b")):
                    await conn.execute(
                        text(
                            f"INSERT INTO {table} (delivery_id, webhook_uid, received_at, size, "
                            "label, payload) VALUES (:d, :w, :t, 2, 'Accepted', :p)"
                        ),
                        {"d": f"dlv-{delivery}-{uid}", "w": f"wh-{uid}", "t": stamp, "p": b"{}"},
                    )
            await migrate(database)
            async with database.read() as conn:
                run = (
                    await conn.execute(
                        text("SELECT delivery_id, automation_uid FROM runs WHERE run_id = :r"),
                        {"r": f"run-{uid}"},
                    )
                ).one()
                logged = dict(
                    (
                        await conn.execute(
                            text(
                                "SELECT delivery_id, evaluation FROM deliveries "
                                "WHERE webhook_uid = :w"
                            ),
                            {"w": f"wh-{uid}"},
                        )
                    ).all()
                )
                revision = (
                    await conn.execute(text("SELECT value FROM config_revision WHERE id = 1"))
                ).scalar_one()
            return {"uid": uid, "run": tuple(run), "logged": logged, "revision": revision}
        finally:
            await database.close()

    found = asyncio.run(run())
    uid = found["uid"]
    assert found["run"] == (f"dlv-a-{uid}", f"auto-{uid}")
    assert found["logged"] == {f"dlv-a-{uid}": "evaluated", f"dlv-b-{uid}": "pending"}
    assert found["revision"] >= 1  # type: ignore[operator]
