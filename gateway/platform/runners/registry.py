"""Runners (docs/runs-and-tasks.md, "Runners"): registered by an agent API key in a team, seen
whenever they call (their presence), listed with the runs they hold."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import msgspec
from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.backends.key_cache import KeyCache
from gateway.foundation.store import tables as t
from gateway.foundation.store.rows import from_row
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import Forbidden, InvalidRequest, NotFound
from gateway.platform.runners.models import Worker
from gateway.platform.runs.creation.worker_pinning import POOL
from gateway.platform.runs.record.states import HELD

PRESENCE_PRECISION = timedelta(seconds=1)  # how stale a runner's last_seen_at may be
r = t.runs


class Runner(msgspec.Struct, frozen=True):
    uid: str
    team_uid: str
    agent_uid: str
    factory_uid: str | None
    worker_id: str | None = None  # a self-hosted worker: claims only the runs pinned to it
    debug_sessions: bool = False  # opens debug sessions of the runs it failed

    @classmethod
    def from_row(cls, row: Any) -> Runner:
        """A row of tables.runners."""
        return from_row(cls, row)


def _agent(principal: Principal) -> None:
    if principal.kind != "agent":
        raise Forbidden("Authorization: runners authenticate with an agent API key")


async def register(
    conn: AsyncConnection,
    principal: Principal,
    *,
    name: str,
    host: str | None,
    factory_uid: str | None,
    concurrency: int,
    version: str | None,
    worker_id: str | None = None,
    debug_sessions: bool = False,
) -> Runner:
    """A new runner of the agent's team (the active team when the key has several)."""
    _agent(principal)
    team_uid = principal.active_team_uid or min(principal.team_uids, default=None)
    if team_uid is None:
        raise Forbidden("Authorization: the agent belongs to no team")
    if worker_id == POOL:
        raise InvalidRequest(f"worker_id: {POOL!r} names the team's pool; omit it to join it")
    if factory_uid is not None:
        factory = (
            await conn.execute(select(t.factories).where(t.factories.c.uid == factory_uid))
        ).first()
        if factory is None or factory.team_uid != team_uid:
            raise NotFound(f"factory_uid: {factory_uid} is not a factory of the runner's team")
    now = utcnow()
    uid = ids.new_id("rnr")
    await conn.execute(
        insert(t.runners).values(
            uid=uid,
            team_uid=team_uid,
            agent_uid=principal.uid,
            name=name,
            host=host,
            factory_uid=factory_uid,
            concurrency=concurrency,
            version=version,
            started_at=now,
            last_seen_at=now,
            worker_id=worker_id,
            debug_sessions=debug_sessions,
        )
    )
    return Runner(uid, team_uid, principal.uid, factory_uid, worker_id, debug_sessions)


async def runner_of(
    conn: AsyncConnection,
    principal: Principal,
    runner_uid: str,
    seen_lately: KeyCache | None = None,
) -> Runner:
    """The caller's runner, seen now (its presence); 404 for anyone else's. With `seen_lately`
    (runners this process saw, kept while their recorded presence is fresh: at most
    PRESENCE_PRECISION), a runner found there costs no query."""
    _agent(principal)
    hit = seen_lately.get(runner_uid) if seen_lately is not None else None
    if isinstance(hit, Runner) and hit.agent_uid == principal.uid:
        return hit
    generation = seen_lately.generation if seen_lately is not None else 0
    row = (await conn.execute(select(t.runners).where(t.runners.c.uid == runner_uid))).first()
    if row is None or row.agent_uid != principal.uid:
        raise NotFound(f"runner_uid: {runner_uid} is not a runner of this agent")
    now = utcnow()
    seen = row.last_seen_at
    if now - seen > PRESENCE_PRECISION:  # one write a second is presence enough
        await conn.execute(
            update(t.runners).where(t.runners.c.uid == runner_uid).values(last_seen_at=now)
        )
        seen = now
    runner = Runner.from_row(row)
    if seen_lately is not None:  # until its presence is due again (a runner never changes)
        fresh_for = (seen + PRESENCE_PRECISION - now).total_seconds()
        seen_lately.put(runner_uid, runner, runner.agent_uid, generation, ttl_s=fresh_for)
    return runner


async def list_runners(conn: AsyncConnection, principal: Principal, lease_s: float) -> list[Worker]:
    """The runners of the caller's teams seen within two leases, newest first, with the runs
    they hold; `online` while seen within one lease (heartbeats may be a moment stale)."""
    now = utcnow()
    recent = now - timedelta(seconds=2 * lease_s)
    rows = (
        await conn.execute(
            select(t.runners)
            .where(
                t.runners.c.team_uid.in_(principal.team_uids), t.runners.c.last_seen_at >= recent
            )
            .order_by(t.runners.c.last_seen_at.desc(), t.runners.c.uid)
        )
    ).all()
    held: dict[str, int] = {}
    if rows:
        counts = await conn.execute(
            select(r.c.runner_uid, func.count())
            .where(r.c.runner_uid.in_([row.uid for row in rows]), r.c.state.in_(sorted(HELD)))
            .group_by(r.c.runner_uid)
        )
        held = {uid: count for uid, count in counts.all()}
    online_since = now - timedelta(seconds=lease_s)
    return [
        Worker.of(row, online=row.last_seen_at >= online_since, runs_held=held.get(row.uid, 0))
        for row in rows
    ]
