"""Pruning the delivery log reads only the deliveries past the retention: it runs once a minute
inside the evaluator's write transaction, so a scan of the whole log there holds every other
writer (0.35 s at 300,000 deliveries before ix_deliveries_received)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import event

from gateway.foundation.store.db import create_database
from gateway.foundation.store.migrate import migrate
from gateway.webhook_gateway.deliveries import log as delivery_log


def test_prune_on_sqlite_finds_old_deliveries_by_the_time_index(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    statements: list[tuple[str, Any]] = []

    async def prune_once() -> None:
        database = create_database(f"sqlite+aiosqlite:///{path}")
        try:
            await migrate(database)

            def capture(_conn: Any, _cursor: Any, sql: str, params: Any, *_: Any) -> None:
                if sql.lstrip().upper().startswith("DELETE FROM DELIVERIES"):
                    statements.append((sql, params))

            event.listen(database.writer.sync_engine, "before_cursor_execute", capture)
            async with database.transaction() as conn:
                await delivery_log.prune(conn)
        finally:
            await database.close()

    asyncio.run(prune_once())
    assert len(statements) == 1
    sql, params = statements[0]
    with sqlite3.connect(path) as conn:
        plan = " | ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    assert "ix_deliveries_received" in plan, plan
