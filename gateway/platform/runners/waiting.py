"""Self-hosted workers a factory's definition names (`workerHost`) that have not registered yet:
their runs wait for them, and the workers list says so. A worker is known by the name it
registers with (`gateway runner --worker-id`); `warp` is the hosted fleet, never waited for."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.runners.models import WaitedWorker

HOSTED = "warp"


async def waiting_workers(
    conn: AsyncConnection, team_uids: Collection[str], registered: Collection[str]
) -> list[WaitedWorker]:
    """The worker hosts the teams' file agents and automations resolve to, less `registered`
    (the names of the workers seen), each with the factories naming it; sorted by host."""
    a, auto, f = t.agents, t.automations, t.factories
    teams = sorted(team_uids)
    agents = select(a.c.factory_uid, a.c.run_defaults).where(
        a.c.team_uid.in_(teams), a.c.definition_name.is_not(None)
    )
    automations = (
        select(auto.c.factory_uid, auto.c.agent_config)
        .join(f, f.c.uid == auto.c.factory_uid)
        .where(f.c.team_uid.in_(teams), auto.c.definition_name.is_not(None))
    )
    named: dict[str, set[str]] = {}
    for query in (agents, automations):
        for factory_uid, settings in await conn.execute(query):
            host = (settings or {}).get("worker_host")
            if host and host != HOSTED and host not in registered and factory_uid:
                named.setdefault(host, set()).add(factory_uid)
    return [
        WaitedWorker(worker_host=host, factory_uids=sorted(factories))
        for host, factories in sorted(named.items())
    ]
