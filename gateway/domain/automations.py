"""Automations: a prompt plus webhook triggers whose payload filters decide when a run starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.domain.webhooks import validate_name
from gateway.errors import InvalidRequest, NotFound
from gateway.store import tables as t
from gateway.store.types import utcnow

MAX_TRIGGERS = 20
MAX_PROMPT = 100_000
FIELDS = {"name", "prompt", "enabled", "triggers"}


@dataclass(frozen=True, slots=True)
class Trigger:
    webhook_uid: str
    payload: dict[str, Any] | None


def parse_triggers(value: Any) -> list[Trigger]:
    if not isinstance(value, list) or not value:
        raise InvalidRequest("triggers: expected a non-empty list")
    if len(value) > MAX_TRIGGERS:
        raise InvalidRequest(f"triggers: at most {MAX_TRIGGERS}")
    return [_parse_trigger(item, f"triggers[{i}]") for i, item in enumerate(value)]


def _parse_trigger(item: Any, path: str) -> Trigger:
    if not isinstance(item, dict):
        raise InvalidRequest(f"{path}: expected an object")
    unknown = sorted(set(item) - {"provider", "event", "filter"})
    if unknown:
        raise InvalidRequest(f"{path}.{unknown[0]}: unknown field")
    if item.get("provider") != "webhook":
        raise InvalidRequest(f'{path}.provider: expected "webhook"')
    if item.get("event") != "received":
        raise InvalidRequest(f'{path}.event: expected "received"')
    spec = item.get("filter")
    if not isinstance(spec, dict):
        raise InvalidRequest(f"{path}.filter: expected an object with webhook_ids")
    unknown = sorted(set(spec) - {"webhook_ids", "payload"})
    if unknown:
        raise InvalidRequest(f"{path}.filter.{unknown[0]}: unknown field")
    webhook_ids = spec.get("webhook_ids")
    if (
        not isinstance(webhook_ids, list)
        or len(webhook_ids) != 1
        or not isinstance(webhook_ids[0], str)
    ):
        raise InvalidRequest(
            f"{path}.filter.webhook_ids: expected a list of exactly one webhook uid "
            "(add one trigger per webhook)"
        )
    payload = spec.get("payload")
    if payload is not None:
        _check_filter(payload, f"{path}.filter.payload")
    return Trigger(webhook_ids[0], payload)


def _check_filter(payload: Any, path: str) -> None:
    """400 naming the field and the filter's own JSON path of the fault ("$.a.b")."""
    from filters import FilterError, parse_filter  # the filter compiler; imported when used

    if not isinstance(payload, dict):
        raise InvalidRequest(f"{path}: expected a JSON object (a payload filter)")
    try:
        parse_filter(payload)
    except FilterError as exc:
        raise InvalidRequest(f"{path}: {exc.path}: {exc.message}") from exc


async def _check_webhooks(conn: AsyncConnection, factory_uid: str, triggers: list[Trigger]) -> None:
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


def _prompt(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest("prompt: must be a non-blank string")
    if len(value) > MAX_PROMPT:
        raise InvalidRequest(f"prompt: longer than {MAX_PROMPT} characters")
    return value


def _enabled(value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidRequest("enabled: expected true or false")
    return value


def parse_changes(body: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    """Validated column values from a create (all required but enabled) or patch body."""
    for key in body:
        if key not in FIELDS:
            raise InvalidRequest(f"{key}: unknown field")
    if creating:
        for key in ("name", "prompt", "triggers"):
            if key not in body:
                raise InvalidRequest(f"{key}: required")
    changes: dict[str, Any] = {}
    if "name" in body:
        changes["name"] = validate_name(body["name"])
    if "prompt" in body:
        changes["prompt"] = _prompt(body["prompt"])
    if "enabled" in body or creating:
        changes["enabled"] = _enabled(body.get("enabled", True))
    if "triggers" in body:
        parse_triggers(body["triggers"])
        changes["triggers"] = body["triggers"]
    return changes


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
        for i, trig in enumerate(parse_triggers(raw))
    ]
    await conn.execute(insert(t.automation_triggers), rows)


async def create_automation(
    conn: AsyncConnection,
    factory_uid: str,
    changes: dict[str, Any],
    *,
    definition_name: str | None = None,
) -> Row[Any]:
    await _check_webhooks(conn, factory_uid, parse_triggers(changes["triggers"]))
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
        await _check_webhooks(conn, factory_uid, parse_triggers(changes["triggers"]))
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
