"""Runs and their creators as tasks (and schedules) show them: the runs API's `RunItem` and
`Creator`, from a run's row or a principal's (kind, uid)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.platform.runs import records
from gateway.platform.runs.models import Creator, RunItem, RunRecord


@dataclass(frozen=True, slots=True)
class _Person:
    """What runs.records.creators reads of each row."""

    creator_kind: str
    creator_uid: str


async def profiles(conn: AsyncConnection, people: Iterable[tuple[str, str]]) -> dict[str, Creator]:
    """The creators of (kind, uid) principals, users and agents, keyed by uid; unknown ones are
    missing."""
    return await records.creators(conn, [_Person(kind, uid) for kind, uid in people])


async def run_item(conn: AsyncConnection, run: Row[Any] | RunRecord) -> RunItem:
    """The RunItem of a run, with its creator."""
    record = run if isinstance(run, RunRecord) else RunRecord.from_row(run)
    return await records.run_item(conn, record)
