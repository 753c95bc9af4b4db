"""`gateway apply DIR`: factory definition folders (webhooks/*.yaml, automations/*.yaml).

Files are matched to what exists by file name (webhooks.definition_name and
automations.definition_name), so uids stay stable across re-applies. Everything is applied in
one transaction: a fault in any file changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import yaml
from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.automations import management as automations
from gateway.automations.models import AutomationCreate, AutomationPatch, encode_triggers
from gateway.errors import ServiceError
from gateway.platform.factory_files.schema import definition_schema
from gateway.services import Services
from gateway.store import tables as t
from gateway.webhooks import management as webhooks
from gateway.webhooks.models import WebhookCreate


class DefinitionError(Exception):
    """A definition file is missing, unreadable or invalid; the message names file and key."""


Files = list[tuple[str, dict[str, Any]]]


def load_directory(directory: str) -> tuple[Files, Files]:
    """(webhook files, automation files) as (file name, validated document), sorted by name."""
    root = Path(directory)
    if not root.is_dir():
        raise DefinitionError(f"{directory}: not a directory")
    return _read_all(root / "webhooks", "webhook"), _read_all(root / "automations", "automation")


async def apply_definitions(
    services: Services, factory_uid: str, webhook_files: Files, automation_files: Files
) -> dict[str, Any]:
    async with services.database.transaction() as conn:
        team_uid = await _factory_team(conn, factory_uid)
        hooks = [
            await _apply_webhook(conn, services, factory_uid, team_uid, name, doc)
            for name, doc in webhook_files
        ]
        autos = [
            await _apply_automation(conn, factory_uid, name, doc) for name, doc in automation_files
        ]
    return {"factory_uid": factory_uid, "webhooks": hooks, "automations": autos}


def _read_all(folder: Path, kind: str) -> Files:
    if not folder.is_dir():
        return []
    schema = definition_schema(kind)
    files = sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])
    return [(path.stem, _read(path, schema)) for path in files]


def _read(path: Path, schema: dict[str, Any]) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise DefinitionError(f"{path}: cannot read YAML ({exc})") from exc
    if not isinstance(doc, dict):
        raise DefinitionError(f"{path}: expected a mapping of keys")
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(doc)
    )
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise DefinitionError(f"{path}: {where}: {error.message}")
    return doc


async def _factory_team(conn: AsyncConnection, factory_uid: str) -> str:
    row = (
        await conn.execute(select(t.factories.c.team_uid).where(t.factories.c.uid == factory_uid))
    ).first()
    if row is None:
        raise DefinitionError(f"--factory: no factory {factory_uid!r}")
    return str(row.team_uid)


async def _existing(
    conn: AsyncConnection, table: Any, factory_uid: str, name: str
) -> Row[Any] | None:
    query = select(table).where(table.c.factory_uid == factory_uid, table.c.definition_name == name)
    if table is t.webhooks:
        query = query.where(t.webhooks.c.deleted_at.is_(None))
    return (await conn.execute(query)).first()


async def _apply_webhook(
    conn: AsyncConnection,
    services: Services,
    factory_uid: str,
    team_uid: str,
    file_name: str,
    doc: dict[str, Any],
) -> dict[str, Any]:
    where = f"webhooks/{file_name}.yaml"
    spec = _webhook_spec(file_name, doc)
    try:
        row = await _existing(conn, t.webhooks, factory_uid, file_name)
        if row is None:
            created = await webhooks.create_webhook(
                conn, services, factory_uid, team_uid, spec, definition_name=file_name
            )
            result = {"name": file_name, "uid": created.uid, "action": "created"}
            return {**result, "secret": created.secret} if created.secret else result
        if _unchanged(row, spec):
            return {"name": file_name, "uid": row.uid, "action": "unchanged"}
        await webhooks.redefine_webhook(conn, services, factory_uid, team_uid, row.uid, spec)
        return {"name": file_name, "uid": row.uid, "action": "updated"}
    except ServiceError as exc:
        raise DefinitionError(f"{where}: {exc.detail}") from exc


def _webhook_spec(file_name: str, doc: dict[str, Any]) -> WebhookCreate:
    """The spec of a file the definition schema accepted (it enforces the cross-key rules)."""
    return WebhookCreate(
        name=doc.get("name", file_name),
        auth_mode=doc.get("authMode", "token"),
        signature_scheme=doc.get("signatureScheme"),
        secret_name=doc.get("secretName"),  # secrets never go into files
        delivery_id_header=doc.get("deliveryIdHeader"),
        enabled=doc.get("enabled", True),
    )


def _unchanged(row: Row[Any], spec: WebhookCreate) -> bool:
    fields = [
        "auth_mode",
        "signature_scheme",
        "name",
        "enabled",
        "delivery_id_header",
        "secret_name",
    ]
    return all(getattr(spec, name) == getattr(row, name) for name in fields)


async def _apply_automation(
    conn: AsyncConnection, factory_uid: str, file_name: str, doc: dict[str, Any]
) -> dict[str, Any]:
    where = f"automations/{file_name}.yaml"
    changes = {"name": file_name, "enabled": True, **doc}
    changes["name"] = changes["name"].strip()
    for i, trigger in enumerate(changes["triggers"]):
        payload = trigger["filter"].get("payload")
        if payload and (fault := automations.filter_fault(payload)):
            raise DefinitionError(f"{where}: triggers[{i}].filter.payload: {fault}")
    try:
        row = await _existing(conn, t.automations, factory_uid, file_name)
        if row is None:
            spec = msgspec.convert(changes, AutomationCreate)  # the schema checked its shape
            triggers = await automations.check_triggers(conn, factory_uid, spec.triggers)
            record = automations.AutomationRecord(
                name=spec.name,
                prompt=spec.prompt,
                enabled=spec.enabled,
                triggers=triggers,
                definition_name=file_name,
            )
            uid = await automations.insert_automation(conn, factory_uid, record)
            return {"name": file_name, "uid": uid, "action": "created"}
        changes["triggers"] = encode_triggers(automations.checked_shape(changes["triggers"])[0])
        differing = {key: value for key, value in changes.items() if getattr(row, key) != value}
        if not differing:
            return {"name": file_name, "uid": row.uid, "action": "unchanged"}
        if "triggers" in differing:
            differing["triggers"] = doc["triggers"]
        patch = msgspec.convert(differing, AutomationPatch)
        await automations.update_automation(conn, factory_uid, row.uid, patch)
        return {"name": file_name, "uid": row.uid, "action": "updated"}
    except ServiceError as exc:
        raise DefinitionError(f"{where}: {exc.detail}") from exc
