"""Runs and their creators as tasks (and schedules, and dispatches) show them: the `Run` and
`Creator` shapes of the runs API, from a run's row or a principal's (kind, uid).

The runs package builds these bodies as dicts (`runs.records.run_json`, `creators`); this module
is where they become the runs API's Structs for the contexts that embed them, so that one place
changes when the runs package answers its Structs itself."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.platform.runs.records import creators, one_run_json
from gateway.platform.runs.routes import Creator, Run


@dataclass(frozen=True, slots=True)
class _Person:
    """What runs.records.creators reads of each row."""

    creator_kind: str
    creator_uid: str


async def profiles(conn: AsyncConnection, people: Iterable[tuple[str, str]]) -> dict[str, Creator]:
    """The creators of (kind, uid) principals, users and agents, keyed by uid; unknown ones are
    missing."""
    found = await creators(conn, [_Person(kind, uid) for kind, uid in people])
    return {uid: Creator(**profile) for uid, profile in found.items()}


async def run_item(conn: AsyncConnection, row: Row[Any]) -> Run:
    """The RunItem of a run's row, with its creator."""
    return msgspec.convert(await one_run_json(conn, row), Run)
