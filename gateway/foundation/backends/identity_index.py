"""The delivery log's index by (webhook, identity): the embedded backend's, made when it starts.

Past its memory, the embedded backend's de-duplication looks first copies up in the log by
webhook and identity (`first_copies`; the outbox writer's `_FIRST_IN_LOG` names the index). With
Redis, de-duplication is Redis's, and nothing reads this index: every delivery the evaluator
logged still took a page of it, since identities are spread over the whole index (10-30 µs of
the evaluator's CPU a delivery with deliveries arriving in random order, docs/performance.md).
So it is not part of the shared schema (migration 0030 drops it): the embedded backend makes it
when it starts, once per store (building it over the log's rows then, a few seconds a million
rows). A store once used by the embedded backend keeps it; `DROP INDEX ix_deliveries_identity`
takes it away from one served by Redis since.
"""

from __future__ import annotations

import logging

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from gateway.foundation.store import Database

log = logging.getLogger("gateway.ingress")

NAME = "ix_deliveries_identity"
_CREATE = f"CREATE INDEX IF NOT EXISTS {NAME} ON deliveries (webhook_uid, identity)"
_FOUND = {
    "sqlite": "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = :name",
    "postgresql": (
        "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = :name"
    ),
}


async def ensure_identity_index(database: Database) -> None:
    """Makes the index unless the store has it (logged: on a large log it takes a while)."""
    if await exists(database):
        return
    log.info("the delivery log's de-duplication index (%s): building it, once", NAME)
    try:
        async with database.transaction() as conn:
            await conn.execute(text(_CREATE))
    except DBAPIError:
        # two processes making it at once: PostgreSQL's IF NOT EXISTS does not guard the
        # catalogue against the other's commit; what counts is that it exists now
        if not await exists(database):
            raise


async def exists(database: Database) -> bool:
    """Whether the store has the index."""
    async with database.read() as conn:
        found = await conn.execute(text(_FOUND[conn.dialect.name]), {"name": NAME})
        return found.first() is not None
