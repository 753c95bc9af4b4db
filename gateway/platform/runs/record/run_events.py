"""The events a run's life writes to the event log (gateway/foundation/events): `run.created` when
it is inserted, `run.state_changed` with every timeline entry, and `run.succeeded`, `run.failed` or
`run.cancelled` beside the one that ends it; in the transaction of the change."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec
from msgspec import UNSET
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.events.catalogue import RUN_END_EVENTS, FollowupEventData, RunEventData
from gateway.foundation.events.log import NewEvent, record_encoded, record_events
from gateway.foundation.store import tables as t
from gateway.foundation.store.bulk import from_sqlite_time, json_value
from gateway.platform.runs.record.models import RunRecord
from gateway.platform.runs.record.states import RUN_STATES

r = t.runs
_IDS = ("run_id", "team_uid", "factory_uid", "conversation_id")
_COLUMNS = (
    *(r.c.run_id, r.c.team_uid, r.c.factory_uid, r.c.conversation_id, r.c.title, r.c.source),
    *(r.c.created_at, r.c.parent_run_id, r.c.automation_uid, r.c.delivery_id),
)


def created_data(run: RunRecord) -> RunEventData:
    return RunEventData(
        run_id=run.run_id,
        factory_uid=run.factory_uid,
        conversation_id=run.conversation_id,
        state=run.state,
        title=run.title,
        source=run.source,
        created_at=run.created_at,
        updated_at=run.updated_at,
        parent_run_id=run.parent_run_id or UNSET,
        automation_uid=run.automation_uid or UNSET,
        delivery_id=run.delivery_id or UNSET,
    )


async def on_created(conn: AsyncConnection, run: RunRecord) -> None:
    await record_events(
        conn, [NewEvent("run.created", run.team_uid, created_data(run), run.factory_uid)]
    )


async def on_created_rows(
    conn: AsyncConnection, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """`run.created` of a batch of runs given as their values in the driver's form, in the order
    of `columns` (the evaluator's, thousands a second: the data is built as the JSON text the
    store takes, each of the batch's few times converted once)."""
    at = {name: i for i, name in enumerate(columns)}
    run_id, team, factory, conversation = (at[n] for n in _IDS)
    title, state, source, created = at["title"], at["state"], at["source"], at["created_at"]
    automation, delivery = at["automation_uid"], at["delivery_id"]
    times: dict[Any, str] = {}
    events = []
    for row in rows:
        moment = row[created]
        text = times.get(moment)
        if text is None:
            text = times[moment] = _event_time(moment)
        data: dict[str, Any] = {
            "run_id": row[run_id],
            "factory_uid": row[factory],
            "conversation_id": row[conversation],
            "state": row[state],
            "title": row[title],
            "source": row[source],
            "created_at": text,
            "updated_at": text,
        }
        if row[automation]:
            data["automation_uid"] = row[automation]
        if row[delivery]:
            data["delivery_id"] = row[delivery]
        events.append((row[team], row[factory], "run.created", moment, json_value(data)))
    await record_encoded(conn, events)


def _event_time(value: datetime | str) -> str:
    """A time as a driver takes it (SQLite: naive UTC text "YYYY-MM-DD HH:MM:SS.ffffff") as
    an event's data shows times (msgspec's text: "YYYY-MM-DDTHH:MM:SS[.ffffff]Z"), by cutting
    and joining the text: each run of a batch has a time of its own."""
    if not isinstance(value, str):
        return msgspec.to_builtins(value)  # type: ignore[no-any-return]
    if len(value) != 26:
        return msgspec.to_builtins(from_sqlite_time(value))  # type: ignore[no-any-return]
    fraction = value[19:]
    return f"{value[:10]}T{value[11:19]}{'' if fraction == '.000000' else fraction}Z"


async def on_states(
    conn: AsyncConnection, changes: Sequence[tuple[str, str, datetime, str | None, str | None]]
) -> None:
    """(run_id, state, at, runner_uid, reason) entered: one query for the runs, one INSERT."""
    # the timeline also holds debug session entries, which are no state of the run
    changes = [change for change in changes if change[1] in RUN_STATES]
    if not changes:
        return
    wanted = sorted({change[0] for change in changes})
    runs = {
        row.run_id: row
        for row in await conn.execute(select(*_COLUMNS).where(r.c.run_id.in_(wanted)))
    }
    events = []
    for run_id, state, at, runner_uid, reason in changes:
        row = runs.get(run_id)
        if row is None:
            continue
        data = RunEventData(
            run_id=run_id,
            factory_uid=row.factory_uid,
            conversation_id=row.conversation_id,
            state=state,
            title=row.title,
            source=row.source,
            created_at=row.created_at,
            updated_at=at,
            parent_run_id=row.parent_run_id or UNSET,
            automation_uid=row.automation_uid or UNSET,
            delivery_id=row.delivery_id or UNSET,
            runner_uid=runner_uid or UNSET,
            reason=reason or UNSET,
        )
        events.append(NewEvent("run.state_changed", row.team_uid, data, row.factory_uid, at))
        ended = RUN_END_EVENTS.get(state)
        if ended is not None:
            events.append(NewEvent(ended, row.team_uid, data, row.factory_uid, at))
    await record_events(conn, events)


async def on_followup(
    conn: AsyncConnection, run: RunRecord, state: str, message: str, at: datetime
) -> None:
    """`run.followup_received`: a follow-up reached the run (now in `state`)."""
    await record_events(conn, [followup_event(run, state, message, at)])


def followup_event(run: RunRecord, state: str, message: str, at: datetime) -> NewEvent:
    data = FollowupEventData(
        run_id=run.run_id,
        factory_uid=run.factory_uid,
        conversation_id=run.conversation_id,
        state=state,
        message=message[:2000],
        received_at=at,
    )
    return NewEvent("run.followup_received", run.team_uid, data, run.factory_uid, at)
