"""Benchmark runs and trials as the store holds them, read once into records the rules share:
a run's status follows its trials (running while any is not finished, then completed; cancelled
once cancelled)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from msgspec import Struct
from sqlalchemy import Row, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.factories import Factory
from gateway.foundation.store import tables as t
from gateway.foundation.store.rows import from_row
from gateway.kernel.errors import NotFound
from gateway.platform.benchmark_suites.models import (
    ConfigurationOut,
    RunStatus,
    Trial,
)
from gateway.platform.runs.record.states import TERMINAL

b, tr, r = t.benchmark_runs, t.benchmark_trials, t.runs


class StoredRun(Struct, kw_only=True):
    """A launch of a suite, with the configurations it was launched with."""

    uid: str
    suite_uid: str
    factory_uid: str
    configurations: list[ConfigurationOut]
    created_by_uid: str | None
    created_at: datetime
    cancelled_at: datetime | None

    @classmethod
    def from_row(cls, row: Row[Any]) -> StoredRun:
        return from_row(cls, row)


class StoredTrial(Struct, kw_only=True):
    """A trial with its agent run's state and times."""

    uid: str
    benchmark_run_uid: str
    task_uid: str
    task_title: str
    configuration: str
    attempt_number: int
    agent_run_id: str
    state: str
    created_at: datetime
    run_created_at: datetime
    run_updated_at: datetime

    @classmethod
    def from_row(cls, row: Row[Any]) -> StoredTrial:
        return from_row(cls, row)

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL

    def view(self) -> Trial:
        return Trial(
            uid=self.uid,
            benchmark_run_uid=self.benchmark_run_uid,
            task_uid=self.task_uid,
            task_title=self.task_title,
            configuration=self.configuration,
            attempt_number=self.attempt_number,
            agent_run_id=self.agent_run_id,
            state=self.state,
            created_at=self.created_at,
        )


async def get_run(conn: AsyncConnection, factory: Factory, uid: str) -> StoredRun:
    row = (await conn.execute(select(b).where(b.c.uid == uid))).first()
    if row is None or row.factory_uid != factory.uid:
        raise NotFound(f"benchmark_run_uid: no benchmark run {uid} in this factory")
    return StoredRun.from_row(row)


async def trials(conn: AsyncConnection, run_uids: list[str]) -> dict[str, list[StoredTrial]]:
    """Per benchmark run, its trials in order."""
    query = (
        select(
            tr,
            r.c.state,
            r.c.created_at.label("run_created_at"),
            r.c.updated_at.label("run_updated_at"),
        )
        .join(r, r.c.run_id == tr.c.agent_run_id)
        .where(tr.c.benchmark_run_uid.in_(run_uids))
        .order_by(tr.c.created_at, tr.c.task_title, tr.c.configuration, tr.c.attempt_number)
    )
    found: dict[str, list[StoredTrial]] = defaultdict(list)
    for row in await conn.execute(query):
        found[row.benchmark_run_uid].append(StoredTrial.from_row(row))
    return found


async def run_trials(conn: AsyncConnection, run: StoredRun) -> list[StoredTrial]:
    return (await trials(conn, [run.uid]))[run.uid]


def status_of(run: StoredRun, its_trials: list[StoredTrial]) -> RunStatus:
    if run.cancelled_at is not None:
        return "cancelled"
    return "completed" if all(trial.finished for trial in its_trials) else "running"


async def costs(conn: AsyncConnection, run_ids: list[str]) -> dict[str, float]:
    """The spend of each agent run."""
    u = t.run_usage
    query = (
        select(u.c.run_id, func.sum(u.c.cost_usd))
        .where(u.c.run_id.in_(run_ids))
        .group_by(u.c.run_id)
    )
    return {run_id: float(total or 0) for run_id, total in await conn.execute(query)}
