"""What every writer of an apply shares: the transaction, the factory, and what earlier steps
found (the uids of the tree's agents by name, the values of the secrets webhooks read)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from msgspec import UNSET, Struct
from sqlalchemy import Table, insert, update
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import FactoryTree
from gateway.foundation.services import Services
from gateway.foundation.store.types import utcnow


@dataclass
class Writing:
    conn: AsyncConnection
    services: Services
    team_uid: str
    factory_uid: str
    creator_uid: str | None  # the user applying (None from the command line)
    agents: dict[str, str] = field(default_factory=dict)  # name -> uid of the tree's agents
    secret_values: dict[str, str] = field(default_factory=dict)
    tree: FactoryTree | None = None  # the tree being applied
    credential_strategy: str | None = None  # the factory's, as stored once the factory is written
    now: datetime = field(default_factory=utcnow)
    _ticks: int = 0

    def moment(self) -> datetime:
        """`now`, a microsecond later at each call: rows made in one apply keep their order
        (listings sort by creation time)."""
        self._ticks += 1
        return self.now + timedelta(microseconds=self._ticks)

    def agent_uid(self, name: str) -> str:
        return self.agents[name]

    async def insert_row(self, table: Table, uid: str, columns: Columns, **fixed: object) -> None:
        """A new row of `table`: its `columns`, the `fixed` ones only made at creation, and its
        creation time (a `moment`)."""
        at = self.moment()
        await self.conn.execute(
            insert(table).values(uid=uid, created_at=at, updated_at=at, **fixed, **columns.values())
        )

    async def update_row(self, table: Table, uid: str, columns: Columns, **more: object) -> None:
        """The row `uid` of `table` given its `columns` (and `more`), updated now."""
        await self.conn.execute(
            update(table)
            .where(table.c.uid == uid)
            .values(updated_at=self.now, **more, **columns.values())
        )


class Columns(Struct, kw_only=True):
    """The column values a writer sets on a row, for its insert and its update alike; a field
    left UNSET is not written (the stored value stays)."""

    def values(self) -> dict[str, object]:
        return {
            name: getattr(self, name)
            for name in self.__struct_fields__
            if getattr(self, name) is not UNSET
        }
