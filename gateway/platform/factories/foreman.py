"""A factory's foreman: the agent that receives the work dispatched to the factory."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.errors import InvalidRequest, NotFound
from gateway.platform.inbox import notifications as inbox


async def set_foreman(conn: AsyncConnection, factory_uid: str, agent_uid: str | None) -> None:
    """Makes `agent_uid` (an agent of the factory's team) the foreman; None leaves the factory
    without one (dispatches then answer 409 no_foreman)."""
    row = (await conn.execute(select(t.factories).where(t.factories.c.uid == factory_uid))).first()
    if row is None:
        raise NotFound(f"factory: {factory_uid} not found")
    if agent_uid is not None:
        agent = (
            await conn.execute(select(t.agents.c.team_uid).where(t.agents.c.uid == agent_uid))
        ).first()
        if agent is None or agent.team_uid != row.team_uid:
            raise InvalidRequest("agent: no agent with that uid in the factory's team")
    await conn.execute(
        update(t.factories)
        .where(t.factories.c.uid == factory_uid)
        .values(foreman_agent_uid=agent_uid, updated_at=utcnow())
    )
    if agent_uid is not None:  # work can start again: the notice that it could not is over
        await inbox.on_foreman_set(conn, factory_uid)
