"""Automations: a prompt plus triggers (webhook deliveries, provider events, schedules) that
decide when a run starts.

The rules take the request Structs of `models` and return `models.Automation`; callers pass a
connection of `Database.transaction()` for changes. Triggers are checked by factory_format's
rules (one rule set for the API and for files) and stored in its canonical form; the webhook
ones are indexed in automation_triggers for the evaluator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET, Struct
from sqlalchemy import Select, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import PlainReference, check_plain_triggers
from factory_format import Trigger as CanonicalTrigger
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import InvalidRequest, NotFound
from gateway.kernel.types import JsonObject
from gateway.webhook_gateway.automations.models import MAX_PROMPT as MAX_PROMPT
from gateway.webhook_gateway.automations.models import MAX_TRIGGERS as MAX_TRIGGERS
from gateway.webhook_gateway.automations.models import (
    Automation,
    AutomationCreate,
    AutomationPatch,
    FileLayers,
    encode_triggers,
    json_form,
    webhook_uids,
)
from gateway.webhook_gateway.automations.schedule_index import (
    remove_schedules,
    skip_missed_slots,
    write_schedules,
)


class AutomationRecord(Struct, kw_only=True):
    """What an automation row holds, checked: what the API and definition files write."""

    name: str
    prompt: str
    enabled: bool
    triggers: list[CanonicalTrigger]
    definition_name: str | None = None
    agent_uid: str | None = None
    agent_config: JsonObject | None = None  # what its runs carry in runs.agent_config
    layers: FileLayers | None = None


def filter_fault(payload: JsonObject) -> str | None:
    """Why `payload` is not a payload filter: its own JSON path and the fault ("$.a.b: ...")."""
    from filters import FilterError, parse_filter  # the filter compiler; imported when used

    try:
        parse_filter(payload)
    except FilterError as exc:
        return f"{exc.path}: {exc.message}"
    return None


def checked_shape(raw: list[Any]) -> tuple[list[CanonicalTrigger], tuple[PlainReference, ...]]:
    """`triggers` of a request, canonical, with the references the store resolves; a 400
    naming the first fault (by its JSON path) otherwise."""
    checked = check_plain_triggers(raw)
    if checked.problems or checked.triggers is None:
        first = checked.problems[0]
        raise InvalidRequest(f"{shown_path(first.path)}: {_plain(first.message)}")
    return list(checked.triggers), checked.references


def shown_path(path: tuple[str | int, ...]) -> str:
    """("triggers", 0, "filter", "repos") -> "triggers[0].filter.repos"; inside a payload
    filter, its own JSON path: "triggers[0].filter.payload: $.pull_request.labels.in[1]"."""
    head: tuple[str | int, ...] = path
    rest: tuple[str | int, ...] = ()
    if len(path) > 4 and path[2:4] == ("filter", "payload"):
        head, rest = path[:4], path[4:]
    shown = ""
    for part in head:
        shown += f"[{part}]" if isinstance(part, int) else (f".{part}" if shown else part)
    if rest:
        shown += ": $" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in rest)
    return shown


def _plain(message: str) -> str:
    return message.removeprefix("payload pattern: ")


async def check_references(
    conn: AsyncConnection, factory_uid: str, references: Sequence[PlainReference]
) -> None:
    """A 400 naming the first webhook that is not a live one of this factory, or schedule that
    is not a scheduled agent of its team. Names of Linear and Slack objects are kept by name."""
    webhooks = {r.value for r in references if r.kind == "webhook"}
    schedules = {r.value for r in references if r.kind == "schedule"}
    live = await _live_webhooks(conn, factory_uid, webhooks) if webhooks else set()
    known = await _team_schedules(conn, factory_uid, schedules) if schedules else set()
    for reference in references:
        if reference.kind == "webhook" and reference.value not in live:
            raise InvalidRequest(
                f"{shown_path(reference.path)}: no webhook {reference.value!r} in this factory"
            )
        if reference.kind == "schedule" and reference.value not in known:
            raise InvalidRequest(
                f"{shown_path(reference.path)}: no scheduled agent {reference.value!r} in the "
                "factory's team"
            )


async def _live_webhooks(conn: AsyncConnection, factory_uid: str, wanted: set[str]) -> set[str]:
    w = t.webhooks
    query = select(w.c.uid).where(
        w.c.uid.in_(sorted(wanted)), w.c.factory_uid == factory_uid, w.c.deleted_at.is_(None)
    )
    return set((await conn.execute(query)).scalars())


async def _team_schedules(conn: AsyncConnection, factory_uid: str, wanted: set[str]) -> set[str]:
    s, f = t.scheduled_agents, t.factories
    team = select(f.c.team_uid).where(f.c.uid == factory_uid).scalar_subquery()
    query = select(s.c.uid).where(s.c.uid.in_(sorted(wanted)), s.c.team_uid == team)
    return set((await conn.execute(query)).scalars())


async def check_triggers(
    conn: AsyncConnection, factory_uid: str, raw: list[Any]
) -> list[CanonicalTrigger]:
    """What saving these triggers needs: valid triggers, live webhooks of the factory, known
    schedules. The canonical triggers."""
    triggers, references = checked_shape(raw)
    await check_references(conn, factory_uid, references)
    return triggers


async def write_trigger_index(
    conn: AsyncConnection, automation_uid: str, triggers: Sequence[CanonicalTrigger]
) -> None:
    """One automation_triggers row per webhook a trigger listens to."""
    await conn.execute(
        delete(t.automation_triggers).where(
            t.automation_triggers.c.automation_uid == automation_uid
        )
    )
    rows = [
        {"webhook_uid": uid, "payload_filter": trigger.payload}
        for trigger in triggers
        for uid in webhook_uids(trigger)
    ]
    if rows:
        await conn.execute(
            insert(t.automation_triggers),
            [
                {"automation_uid": automation_uid, "position": i, **row}
                for i, row in enumerate(rows)
            ],
        )
    await write_schedules(conn, automation_uid, triggers)  # the inline schedules' next slots


class AutomationColumns(Struct, kw_only=True):
    name: str
    prompt: str
    enabled: bool
    triggers: list[Any]
    definition_name: str | None
    agent_uid: str | None
    agent_config: JsonObject | None
    definition: JsonObject | None


def _columns(record: AutomationRecord) -> dict[str, object]:
    columns = AutomationColumns(
        name=record.name,
        prompt=record.prompt,
        enabled=record.enabled,
        triggers=encode_triggers(record.triggers),
        definition_name=record.definition_name,
        agent_uid=record.agent_uid,
        agent_config=record.agent_config,
        definition=None if record.layers is None else json_form(record.layers),
    )
    return msgspec.structs.asdict(columns)


async def check_agent(conn: AsyncConnection, factory_uid: str, agent_uid: str) -> None:
    """A 400 naming `agent_uid` unless it is an agent of the factory's team."""
    a, f = t.agents, t.factories
    team = select(f.c.team_uid).where(f.c.uid == factory_uid).scalar_subquery()
    query = select(a.c.uid).where(a.c.uid == agent_uid, a.c.team_uid == team)
    if (await conn.execute(query)).first() is None:
        raise InvalidRequest(f"agent_uid: no agent {agent_uid!r} in the factory's team")


async def insert_automation(
    conn: AsyncConnection, factory_uid: str, record: AutomationRecord
) -> str:
    """Writes a checked automation; its uid."""
    uid, now = ids.new_id("auto"), utcnow()
    await conn.execute(
        insert(t.automations).values(
            uid=uid, factory_uid=factory_uid, created_at=now, updated_at=now, **_columns(record)
        )
    )
    await write_trigger_index(conn, uid, record.triggers)
    return uid


async def rewrite_automation(conn: AsyncConnection, uid: str, record: AutomationRecord) -> None:
    """Replaces every column of a checked automation (a definition file applied again)."""
    was = select(t.automations.c.enabled).where(t.automations.c.uid == uid)
    resumed = record.enabled and (await conn.execute(was)).scalar() is False
    await conn.execute(
        update(t.automations)
        .where(t.automations.c.uid == uid)
        .values(**_columns(record), updated_at=utcnow())
    )
    await write_trigger_index(conn, uid, record.triggers)
    if resumed:  # the slots that passed while it was disabled are not made up
        await skip_missed_slots(conn, uid)


async def create_automation(
    conn: AsyncConnection, factory_uid: str, spec: AutomationCreate
) -> Automation:
    triggers = await check_triggers(conn, factory_uid, spec.triggers)
    if spec.agent_uid is not None:
        await check_agent(conn, factory_uid, spec.agent_uid)
    record = AutomationRecord(
        name=spec.name,
        prompt=spec.prompt,
        enabled=spec.enabled,
        triggers=triggers,
        agent_uid=spec.agent_uid,
    )
    uid = await insert_automation(conn, factory_uid, record)
    return await get_automation(conn, factory_uid, uid)


async def update_automation(
    conn: AsyncConnection, factory_uid: str, uid: str, patch: AutomationPatch
) -> Automation:
    """Changes the fields `patch` sets; new triggers replace the old ones."""
    checked = None
    if patch.triggers is not UNSET:  # a malformed body answers 400 before a missing one 404
        checked = checked_shape(patch.triggers)
    await require_automation(conn, factory_uid, uid)
    values: dict[str, object] = {
        name: getattr(patch, name)
        for name in ("name", "prompt", "enabled")
        if getattr(patch, name) is not UNSET
    }
    if patch.agent_uid is not UNSET:
        if patch.agent_uid is not None:
            await check_agent(conn, factory_uid, patch.agent_uid)
        # its runs now carry the agent's configuration, read when each is made; a file
        # automation's stored one (resolved for its file's agent) would be another agent's
        values["agent_uid"] = patch.agent_uid
        values["agent_config"] = None
    if checked is not None:
        triggers, references = checked
        await check_references(conn, factory_uid, references)
        await write_trigger_index(conn, uid, triggers)
        values["triggers"] = encode_triggers(triggers)
    was = select(t.automations.c.enabled).where(t.automations.c.uid == uid)
    resumed = patch.enabled is True and (await conn.execute(was)).scalar() is False
    await conn.execute(
        update(t.automations)
        .where(t.automations.c.uid == uid)
        .values(**values, updated_at=utcnow())
    )
    if resumed:  # the slots that passed while it was disabled are not made up
        await skip_missed_slots(conn, uid)
    return await get_automation(conn, factory_uid, uid)


async def delete_automation(conn: AsyncConnection, factory_uid: str, uid: str) -> None:
    await require_automation(conn, factory_uid, uid)
    await remove_automation(conn, uid)


async def remove_automation(conn: AsyncConnection, uid: str) -> None:
    """Deletes the automation and its trigger index rows."""
    await conn.execute(
        delete(t.automation_triggers).where(t.automation_triggers.c.automation_uid == uid)
    )
    await remove_schedules(conn, uid)
    await conn.execute(delete(t.automations).where(t.automations.c.uid == uid))


async def require_automation(conn: AsyncConnection, factory_uid: str, uid: str) -> None:
    """404 unless the automation exists in this factory."""
    a = t.automations
    query = select(a.c.uid).where(a.c.uid == uid, a.c.factory_uid == factory_uid)
    if (await conn.execute(query)).first() is None:
        raise NotFound(f"automation: {uid} not found in this factory")


async def get_automation(conn: AsyncConnection, factory_uid: str, uid: str) -> Automation:
    a = t.automations
    query = select(a).where(a.c.uid == uid, a.c.factory_uid == factory_uid)
    found = await _automations(conn, query)
    if not found:
        raise NotFound(f"automation: {uid} not found in this factory")
    return found[0]


async def list_automations(conn: AsyncConnection, factory_uid: str) -> list[Automation]:
    a = t.automations
    query = select(a).where(a.c.factory_uid == factory_uid).order_by(a.c.created_at, a.c.uid)
    return await _automations(conn, query)


async def _automations(conn: AsyncConnection, query: Select[Any]) -> list[Automation]:
    rows = (await conn.execute(query)).all()
    deleted = await deleted_webhooks(conn, [row.uid for row in rows])
    return [Automation.from_row(row, deleted[row.uid]) for row in rows]


async def deleted_webhooks(
    conn: AsyncConnection, automation_uids: list[str]
) -> dict[str, list[str]]:
    """For each automation, the uids of its trigger webhooks that are deleted (they never fire)."""
    found: dict[str, list[str]] = {uid: [] for uid in automation_uids}
    if not automation_uids:
        return found
    joined = t.automation_triggers.join(
        t.webhooks, t.webhooks.c.uid == t.automation_triggers.c.webhook_uid
    )
    rows = await conn.execute(
        select(t.automation_triggers.c.automation_uid, t.webhooks.c.uid)
        .select_from(joined)
        .where(
            t.automation_triggers.c.automation_uid.in_(automation_uids),
            t.webhooks.c.deleted_at.is_not(None),
        )
    )
    for automation_uid, webhook_uid in rows:
        found[automation_uid].append(webhook_uid)
    return found
