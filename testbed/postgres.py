"""Throwaway PostgreSQL databases for the benchmarks (and the tests): created on the server
GATEWAY_BENCH_POSTGRES_URL names (default postgres@127.0.0.1:5432), dropped afterwards."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

SERVER = os.environ.get("GATEWAY_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432")


async def admin(sql: str, server: str = SERVER) -> None:
    """One statement on the server's `postgres` database (CREATE/DROP DATABASE)."""
    import asyncpg

    conn = await asyncpg.connect(f"{server.rstrip('/')}/postgres")
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@contextmanager
def temporary_database(
    tag: str, server: str = SERVER, *, template: str | None = None, durable: bool = True
) -> Iterator[str]:
    """The URL of a new database, empty or a copy of the database named `template` (which
    nobody may be connected to); dropped (with its connections) on exit. `durable=False`: its
    commits do not wait for the disk (synchronous_commit off), for tests; benchmarks keep the
    server's setting."""
    name = f"{tag}_{os.getpid()}_{secrets.token_hex(3)}"
    copy = f' TEMPLATE "{template}"' if template else ""
    asyncio.run(admin(f'CREATE DATABASE "{name}"{copy}', server))
    if not durable:
        asyncio.run(admin(f'ALTER DATABASE "{name}" SET synchronous_commit = off', server))
    try:
        yield f"{server.rstrip('/')}/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', server))
