"""Runs pinned to a self-hosted worker (`config.worker_host`, spec 2.2): `warp` (the reserved
name of the team's pool) or nothing leaves a run to the pool's runners; any other value must be
the `worker_id` a runner of the team registered under, and only runners registered under it
may claim the run."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.kernel.errors import InvalidRequest
from gateway.platform.runs.record.models import AgentConfig

POOL = "warp"


def pinned_worker(config: AgentConfig | None) -> str | None:
    """The worker a run of `config` is pinned to; None for the team's pool."""
    return pinned_host(None if config is None else config.worker_host)


def pinned_host(host: object) -> str | None:
    """The worker a `worker_host` value pins runs to; None for the team's pool."""
    if not isinstance(host, str) or host.strip() in ("", POOL):
        return None
    return host.strip()


async def check_worker_host(
    conn: AsyncConnection, team_uid: str | None, config: AgentConfig | None, field: str
) -> None:
    """400 naming `field` when the config pins its runs to a worker the team never registered."""
    await check_worker(conn, team_uid, pinned_worker(config), field)


async def check_worker(
    conn: AsyncConnection, team_uid: str | None, worker: str | None, field: str
) -> None:
    """400 naming `field` unless `worker` (None: the pool) is a worker of the team."""
    if worker is None or worker.strip() in ("", POOL):
        return
    worker = worker.strip()
    known = select(t.runners.c.uid).where(
        t.runners.c.team_uid == team_uid, t.runners.c.worker_id == worker
    )
    if (await conn.execute(known.limit(1))).first() is None:
        raise InvalidRequest(
            f"{field}: no worker {worker!r} registered with this team; give {POOL!r} (or "
            "nothing) for the team's runners, or the worker_id of one of GET /agent/workers"
        )
