"""The entities factory metrics group runs and spend by, and how groups are named and sorted."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

from sqlalchemy import case, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.analytics.queries import UNKNOWN, r, u

Dimension = Literal["state", "source", "user", "agent", "model"]


def run_dimension(name: Dimension) -> Any:
    """The runs column a group of runs is keyed by; None (then UNKNOWN) where a run names none."""
    if name == "user":  # runs started by a person; agent keys and automations name none
        return case((r.c.creator_kind == "user", r.c.creator_uid), else_=None)
    columns = {"state": r.c.state, "source": r.c.source, "agent": r.c.agent_uid}
    return columns[name]


def usage_dimension(name: Dimension) -> Any:
    """The run_usage column spend is grouped by (copied from the run when it was reported)."""
    columns = {"source": u.c.source, "user": u.c.user_uid, "agent": u.c.agent_uid}
    return columns.get(name, u.c.model_id)


async def labels(conn: AsyncConnection, name: Dimension, keys: list[str]) -> dict[str, str]:
    """Display names of user (email) and agent (name) keys; other keys name themselves."""
    known = [key for key in keys if key != UNKNOWN]
    if not known or name not in ("user", "agent"):
        return {}
    table, column = (t.users, t.users.c.email) if name == "user" else (t.agents, t.agents.c.name)
    rows = await conn.execute(select(table.c.uid, column).where(table.c.uid.in_(known)))
    return {uid: str(label) for uid, label in rows}


def ordered(keys: Iterable[str], weight: Callable[[str], float]) -> list[str]:
    """Heaviest first, then by key; UNKNOWN always last."""
    return sorted(keys, key=lambda key: (key == UNKNOWN, -weight(key), key))
