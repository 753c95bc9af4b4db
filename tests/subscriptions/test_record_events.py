"""record_events: each event's data is stored as the JSON its Struct (or plain object) makes,
its time as given (else now), on both stores; an unknown type writes nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import msgspec
import orjson
import pytest
from sqlalchemy import select

from gateway.foundation.events.catalogue import WorkItemEventData, WorkItemSource
from gateway.foundation.events.log import NewEvent, record_events
from gateway.foundation.store import tables as t
from gateway.foundation.store.db import create_database
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.settings import Settings

AT = datetime(2026, 12, 3, 5, 50, 23, 123456, tzinfo=UTC)


def _work_item() -> WorkItemEventData:
    return WorkItemEventData(
        work_item_id="wi_1",
        factory_uid="fac_1",
        source=WorkItemSource(provider="github", kind="issue", ref="acme/widgets#7", url=None),
        stage="TRIAGE",
        run_ids=["0193aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"],
        followup_count=0,
        created_at=AT,
        updated_at=AT + timedelta(seconds=1),
    )


def _record_and_read(settings: Settings, events: list[NewEvent], team: str) -> list[tuple]:
    async def run() -> list[tuple]:
        database = create_database(settings.database_url)
        try:
            async with database.transaction() as conn:
                await record_events(conn, events)
            e = t.events
            query = (
                select(e.c.type, e.c.factory_uid, e.c.at, e.c.data)
                .where(e.c.team_uid == team)
                .order_by(e.c.seq)
            )
            async with database.read() as conn:
                return [tuple(row) for row in await conn.execute(query)]
        finally:
            await database.close()

    return asyncio.run(run())


def test_struct_and_plain_data_stored_as_their_json(settings: Settings) -> None:
    team = ids.new_id("team")
    item = _work_item()
    plain = {"n": 3, "text": "héllo", "nested": {"list": [1, 2.5, None]}}
    before = utcnow()
    rows = _record_and_read(
        settings,
        [
            NewEvent("work_item.created", team, item, "fac_1", AT),
            NewEvent("work_item.created", team, plain),  # no time: now
        ],
        team,
    )
    after = utcnow()
    assert [(kind, factory) for kind, factory, _at, _data in rows] == [
        ("work_item.created", "fac_1"),
        ("work_item.created", None),
    ]
    (_, _, first_at, first_data), (_, _, second_at, second_data) = rows
    # what the Struct's builtins are: times as RFC 3339 text, the unset field left out
    assert first_data == msgspec.to_builtins(item)
    assert first_data["created_at"] == "2026-12-03T05:50:23.123456Z"
    assert "previous_stage" not in first_data
    assert first_at == AT
    assert second_data == orjson.loads(orjson.dumps(plain))
    assert before <= second_at <= after


def test_unknown_type_writes_nothing(settings: Settings) -> None:
    team = ids.new_id("team")
    with pytest.raises(ValueError, match="unknown event type"):
        _record_and_read(
            settings,
            [
                NewEvent("work_item.created", team, _work_item()),
                NewEvent("work_item.exploded", team, {}),
            ],
            team,
        )
    assert _record_and_read(settings, [], team) == []
