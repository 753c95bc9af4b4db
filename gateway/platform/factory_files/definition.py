"""A factory's stored definition as readers see it: what plans compare against."""

from __future__ import annotations

from typing import cast

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.kernel.errors import NotFound
from gateway.platform.factory_files.models import KINDS, Kind, StoredDefinition, StoredResource
from gateway.platform.factory_files.state import load_state


async def stored_definition(conn: AsyncConnection, factory_uid: str) -> StoredDefinition:
    row = (await conn.execute(select(t.factories).where(t.factories.c.uid == factory_uid))).first()
    if row is None:
        raise NotFound(f"factory: {factory_uid} not found")
    state = await load_state(conn, row)
    resources = [
        StoredResource(kind=cast(Kind, kind), name=name, uid=stored.uid, definition=stored.form)
        for (kind, name), stored in state.resources.items()
    ]
    resources.sort(key=lambda r: (KINDS.index(r.kind), r.name))
    return StoredDefinition(
        factory_uid=factory_uid, foreman_agent_uid=row.foreman_agent_uid, resources=resources
    )
