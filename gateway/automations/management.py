"""Automations: a prompt plus webhook triggers whose payload filters decide when a run starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.errors import InvalidRequest, NotFound
from gateway.store import tables as t
from gateway.store.types import utcnow

MAX_TRIGGERS = 20
MAX_PROMPT = 100_000


@dataclass(frozen=True, slots=True)
class Trigger:
    webhook_uid: str
    payload: dict[str, Any] | None


def triggers_of(raw: list[Any]) -> list[Trigger]:
    """The triggers of a validated `triggers` list (the API's shape)."""
    return [
        Trigger(item["filter"]["webhook_ids"][0], item["filter"].get("payload")) for item in raw
    ]


def filter_fault(payload: dict[str, Any]) -> str | None:
    """Why `payload` is not a payload filter: its own JSON path and the fault ("$.a.b: ...")."""
    from filters import FilterError, parse_filter  # the filter compiler; imported when used

    try:
        parse_filter(payload)
    except FilterError as exc:
        return f"{exc.path}: {exc.message}"
    return None


async def check_webhooks(conn: AsyncConnection, factory_uid: str, triggers: list[Trigger]) -> None:
    wanted = {trigger.webhook_uid for trigger in triggers}
    found = set(
        (
            await conn.execute(
                select(t.webhooks.c.uid).where(
                    t.webhooks.c.uid.in_(wanted),
                    t.webhooks.c.factory_uid == factory_uid,
                    t.webhooks.c.deleted_at.is_(None),
                )
            )
        ).scalars()
    )
    for i, trigger in enumerate(triggers):
        if trigger.webhook_uid not in found:
            raise InvalidRequest(
                f"triggers[{i}].filter.webhook_ids: "
                f"no webhook {trigger.webhook_uid!r} in this factory"
            )


async def _write_triggers(conn: AsyncConnection, automation_uid: str, raw: list[Any]) -> None:
    await conn.execute(
        delete(t.automation_triggers).where(
            t.automation_triggers.c.automation_uid == automation_uid
        )
    )
    rows = [
        {
            "automation_uid": automation_uid,
            "position": i,
            "webhook_uid": trig.webhook_uid,
            "payload_filter": trig.payload,
        }
        for i, trig in enumerate(triggers_of(raw))
    ]
    await conn.execute(insert(t.automation_triggers), rows)


async def create_automation(
    conn: AsyncConnection,
    factory_uid: str,
    changes: dict[str, Any],
    *,
    definition_name: str | None = None,
) -> Row[Any]:
    """`changes`: validated name, prompt, enabled and triggers (in the API's shape)."""
    await check_webhooks(conn, factory_uid, triggers_of(changes["triggers"]))
    uid, now = ids.new_id("auto"), utcnow()
    await conn.execute(
        insert(t.automations).values(
            uid=uid,
            factory_uid=factory_uid,
            definition_name=definition_name,
            created_at=now,
            updated_at=now,
            **changes,
        )
    )
    await _write_triggers(conn, uid, changes["triggers"])
    return await get_automation_row(conn, factory_uid, uid)


async def update_automation(
    conn: AsyncConnection, factory_uid: str, uid: str, changes: dict[str, Any]
) -> Row[Any]:
    await get_automation_row(conn, factory_uid, uid)
    if "triggers" in changes:
        await check_webhooks(conn, factory_uid, triggers_of(changes["triggers"]))
        await _write_triggers(conn, uid, changes["triggers"])
    await conn.execute(
        update(t.automations)
        .where(t.automations.c.uid == uid)
        .values(**changes, updated_at=utcnow())
    )
    return await get_automation_row(conn, factory_uid, uid)


async def delete_automation(conn: AsyncConnection, factory_uid: str, uid: str) -> None:
    await get_automation_row(conn, factory_uid, uid)
    await conn.execute(
        delete(t.automation_triggers).where(t.automation_triggers.c.automation_uid == uid)
    )
    await conn.execute(delete(t.automations).where(t.automations.c.uid == uid))


async def get_automation_row(conn: AsyncConnection, factory_uid: str, uid: str) -> Row[Any]:
    row = (
        await conn.execute(
            select(t.automations).where(
                t.automations.c.uid == uid, t.automations.c.factory_uid == factory_uid
            )
        )
    ).first()
    if row is None:
        raise NotFound(f"automation: {uid} not found in this factory")
    return row


async def list_automation_rows(conn: AsyncConnection, factory_uid: str) -> list[Row[Any]]:
    query = (
        select(t.automations)
        .where(t.automations.c.factory_uid == factory_uid)
        .order_by(t.automations.c.created_at, t.automations.c.uid)
    )
    return list((await conn.execute(query)).all())


async def deleted_webhooks(
    conn: AsyncConnection, automation_uids: list[str]
) -> dict[str, list[str]]:
    """For each automation, the uids of its trigger webhooks that are deleted (they never fire)."""
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
    found: dict[str, list[str]] = {uid: [] for uid in automation_uids}
    for automation_uid, webhook_uid in rows:
        found[automation_uid].append(webhook_uid)
    return found


def automation_json(row: Row[Any], deleted: list[str]) -> dict[str, Any]:
    return {
        "uid": row.uid,
        "factory_uid": row.factory_uid,
        "name": row.name,
        "prompt": row.prompt,
        "enabled": row.enabled,
        "triggers": row.triggers,
        "webhooks_deleted": sorted(deleted),
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }
