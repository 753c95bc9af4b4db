"""The run timeline: every state a run entered and when. Its creation (QUEUED at created_at) is
implied; later changes are rows of `run_events`, written with the change they record."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime

from msgspec import Struct, structs
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.kernel import ids
from gateway.platform.inbox import notifications as inbox
from gateway.platform.runs.record import replies, run_events
from gateway.platform.runs.record.models import RunRecord, TimelineEvent

e = t.run_events


class Entry(Struct, kw_only=True):
    """One timeline row (tables.run_events): `run_id` entered `state` at `at`."""

    id: str
    run_id: str
    state: str
    at: datetime
    runner_uid: str | None
    reason: str | None


# Rules above the runs that hear of every state change, in the same transaction: the work
# items' stages (platform/work_items/stages.py registers itself when imported; the
# composition, platform/run_start.py, imports it in every process that serves or evaluates).
StateHook = Callable[[AsyncConnection, list[Entry]], Awaitable[None]]
_HOOKS: list[StateHook] = []


def on_state_changes(hook: StateHook) -> StateHook:
    """Registers `hook` (once) to hear every batch of entries `record_entries` writes."""
    if hook not in _HOOKS:
        _HOOKS.append(hook)
    return hook


async def record(
    conn: AsyncConnection,
    run_ids: Iterable[str],
    state: str,
    at: datetime,
    *,
    runner_uid: str | None = None,
    reason: str | None = None,
) -> None:
    """`state` entered at `at` by each of `run_ids`."""
    await record_entries(
        conn, [entry(run_id, state, at, runner_uid=runner_uid, reason=reason) for run_id in run_ids]
    )


def entry(
    run_id: str, state: str, at: datetime, *, runner_uid: str | None, reason: str | None = None
) -> Entry:
    return Entry(
        id=ids.new_id("evt"),
        run_id=run_id,
        state=state,
        at=at,
        runner_uid=runner_uid,
        reason=None if reason is None else reason[:500],
    )


async def record_entries(conn: AsyncConnection, entries: list[Entry]) -> None:
    """Timeline rows made by `entry`, of any runs and states, in one INSERT."""
    if not entries:
        return
    await conn.execute(insert(e), [structs.asdict(entry) for entry in entries])
    # the factory inbox hears of every change here, in the same transaction (only the states it
    # reports cost anything)
    changes: dict[tuple[str, datetime, str | None], list[str]] = {}
    for entry in entries:
        if entry.state in inbox.RUN_KINDS:
            changes.setdefault((entry.state, entry.at, entry.reason), []).append(entry.run_id)
    for (state, at, reason), run_ids in changes.items():
        await inbox.on_run_states(conn, run_ids, state, at, reason)
    # so do the run's replies where its work came from: a start or an end of a run a provider
    # event started enqueues one (replies.py), committed with the change or not at all
    await replies.on_run_entries(conn, entries)
    for hook in _HOOKS:
        await hook(conn, entries)
    # and the event log (docs/events.md), in the same transaction
    await run_events.on_states(
        conn,
        [
            (entry.run_id, entry.state, entry.at, entry.runner_uid, entry.reason)
            for entry in entries
        ],
    )


async def timeline(conn: AsyncConnection, run: RunRecord) -> list[TimelineEvent]:
    """The run's states in order: QUEUED at its creation, then each recorded change."""
    query = select(e.c.state, e.c.at, e.c.runner_uid, e.c.reason).where(e.c.run_id == run.run_id)
    events = [TimelineEvent(state="QUEUED", at=run.created_at, runner_uid=None, reason="created")]
    for state, at, runner_uid, reason in await conn.execute(query.order_by(e.c.at, e.c.id)):
        events.append(TimelineEvent(state=state, at=at, runner_uid=runner_uid, reason=reason))
    return events
