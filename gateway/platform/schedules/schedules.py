"""Scheduled agents (/agent/schedules): a cron schedule that starts an agent run at each slot.

A schedule is team-owned (visible to the team's members; `agent_uid` may name a team agent to
run as) or personal (visible to its creator only). Creating, changing and deleting need user
credentials. `next_run_at` holds the slot due next while the schedule is enabled; pausing
clears it, resuming sets the first slot after the resume. Slots are started by
`gateway.platform.schedules.slot_runs` (docs/schedules.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import msgspec
from sqlalchemy import Row, delete, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.accounts.identities import Principal
from gateway.catalog import ModelSpec
from gateway.errors import Forbidden, InvalidRequest, NotFound
from gateway.platform.runs.models import MAX_PROMPT, AgentConfig, Creator
from gateway.platform.runs.records import creators, json_column
from gateway.platform.runs.standalone import parse_config
from gateway.platform.schedules import cron
from gateway.store import tables as t
from gateway.store.types import utcnow

s = t.scheduled_agents
METADATA_KEY = re.compile(r"[a-zA-Z0-9._-]{1,64}")
MAX_METADATA = 20


def require_user(principal: Principal) -> None:
    if principal.kind != "user":
        raise Forbidden("Authorization: managing schedules needs user credentials")


async def create_schedule(
    conn: AsyncConnection, principal: Principal, body: dict[str, Any], models: Sequence[ModelSpec]
) -> Row[Any]:
    require_user(principal)
    team_owned = body.get("team")
    if team_owned is None:  # the client's default: team-owned for a user of a single team
        team_owned = principal.active_team_uid is not None or len(principal.team_uids) == 1
    team = _team(principal, bool(team_owned))
    values = await _checked(conn, principal, body, models, team, bool(team_owned), current=None)
    uid, now = ids.new_id("sched"), utcnow()
    enabled = body.get("enabled", True)
    await conn.execute(
        insert(s).values(
            uid=uid,
            team_uid=team,
            owner_kind="team" if team_owned else "user",
            enabled=enabled,
            next_run_at=cron.next_slot(values["cron_schedule"], now) if enabled else None,
            created_by_kind=principal.kind,
            created_by_uid=principal.uid,
            updated_by_kind=principal.kind,
            updated_by_uid=principal.uid,
            created_at=now,
            updated_at=now,
            **values,
        )
    )
    return await _load(conn, uid)


async def list_schedules(conn: AsyncConnection, principal: Principal) -> list[Row[Any]]:
    """The schedules the caller sees (of the active team when one is selected), by name."""
    teams = [principal.active_team_uid] if principal.active_team_uid else principal.team_uids
    query = select(s).where(_visible(principal), s.c.team_uid.in_(sorted(teams)))
    return list((await conn.execute(query.order_by(s.c.name, s.c.uid))).all())


async def get_schedule(conn: AsyncConnection, principal: Principal, uid: str) -> Row[Any]:
    """404 for a schedule the caller cannot see, as for one that does not exist."""
    query = select(s).where(s.c.uid == uid, _visible(principal))
    row = (await conn.execute(query)).first()
    if row is None:
        raise NotFound(f"schedule_id: no schedule {uid}")
    return row


async def update_schedule(
    conn: AsyncConnection,
    principal: Principal,
    uid: str,
    body: dict[str, Any],
    models: Sequence[ModelSpec],
) -> Row[Any]:
    """Replaces the schedule's fields (PUT); an absent agent_config keeps the current one. A new
    cron expression or enabling sets the next slot from now."""
    require_user(principal)
    row = await get_schedule(conn, principal, uid)
    values = await _checked(
        conn, principal, body, models, row.team_uid, row.owner_kind == "team", current=row
    )
    enabled = bool(body["enabled"])
    now = utcnow()
    values |= {"enabled": enabled, "updated_at": now}
    values |= {"updated_by_kind": principal.kind, "updated_by_uid": principal.uid}
    if not enabled:
        values["next_run_at"] = None
    elif not row.enabled or values["cron_schedule"] != row.cron_schedule:
        values["next_run_at"] = cron.next_slot(values["cron_schedule"], now)
    await conn.execute(update(s).where(s.c.uid == uid).values(**values))
    return await _load(conn, uid)


async def set_enabled(
    conn: AsyncConnection, principal: Principal, uid: str, enabled: bool
) -> Row[Any]:
    """Pause (no further slots) or resume (the first slot after now; missed ones are skipped)."""
    require_user(principal)
    row = await get_schedule(conn, principal, uid)
    if row.enabled != enabled:
        now = utcnow()
        await conn.execute(
            update(s)
            .where(s.c.uid == uid)
            .values(
                enabled=enabled,
                next_run_at=cron.next_slot(row.cron_schedule, now) if enabled else None,
                updated_at=now,
                updated_by_kind=principal.kind,
                updated_by_uid=principal.uid,
            )
        )
    return await _load(conn, uid)


async def delete_schedule(conn: AsyncConnection, principal: Principal, uid: str) -> None:
    require_user(principal)
    await get_schedule(conn, principal, uid)
    await conn.execute(delete(s).where(s.c.uid == uid))


async def schedules_json(conn: AsyncConnection, rows: Sequence[Row[Any]]) -> list[dict[str, Any]]:
    """ScheduledAgentItem of the official client for each row."""
    people = [
        SimpleNamespace(creator_kind=kind, creator_uid=uid)
        for row in rows
        for kind, uid in (
            (row.created_by_kind, row.created_by_uid),
            (row.updated_by_kind, row.updated_by_uid),
        )
    ]
    profiles = await creators(conn, people)
    return [_json(row, profiles) for row in rows]


def _json(row: Row[Any], profiles: dict[str, Creator]) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": row.uid,
        "name": row.name,
        "cron_schedule": row.cron_schedule,
        "enabled": row.enabled,
        "prompt": row.prompt or "",
        "mode": row.mode,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "scope": {
            "type": "Team" if row.owner_kind == "team" else "User",
            "uid": row.team_uid if row.owner_kind == "team" else row.created_by_uid,
        },
        "history": {"last_ran": row.last_ran_at, "next_run": row.next_run_at},
    }
    optional = {
        "agent_config": row.agent_config,
        "agent_uid": row.agent_uid,
        "metadata": row.metadata,
        "last_spawn_error": row.last_spawn_error,
        "created_by": profiles.get(row.created_by_uid),
        "updated_by": profiles.get(row.updated_by_uid),
    }
    item.update({key: value for key, value in optional.items() if value is not None})
    return item


def _visible(principal: Principal) -> Any:
    team_owned = (s.c.owner_kind == "team") & s.c.team_uid.in_(sorted(principal.team_uids))
    return or_(team_owned, (s.c.owner_kind == "user") & (s.c.created_by_uid == principal.uid))


def _team(principal: Principal, team_owned: bool) -> str:
    """The team a new schedule belongs to: the active team, else the caller's only team."""
    if principal.active_team_uid is not None:
        return principal.active_team_uid
    if len(principal.team_uids) == 1:
        return next(iter(principal.team_uids))
    if team_owned:
        raise InvalidRequest("X-Service-Team-Uid: required, this credential has several teams")
    return min(principal.team_uids)


async def _checked(
    conn: AsyncConnection,
    principal: Principal,
    body: dict[str, Any],
    models: Sequence[ModelSpec],
    team: str,
    team_owned: bool,
    *,
    current: Row[Any] | None,
) -> dict[str, Any]:
    """The columns the body sets, validated."""
    config = (
        json_column(
            parse_config(msgspec.convert(body["agent_config"], AgentConfig), models, "agent_config")
        )
        if body.get("agent_config") is not None
        else (None if current is None else current.agent_config)
    )
    prompt = body.get("prompt") or None
    if prompt is None and not (config or {}).get("skill_spec"):
        raise InvalidRequest("prompt: required unless agent_config.skill_spec is given")
    if prompt is not None and len(prompt) > MAX_PROMPT:
        raise InvalidRequest(f"prompt: longer than {MAX_PROMPT} characters")
    agent_uid = body.get("agent_uid") or None
    if agent_uid is not None:
        if not team_owned:
            raise InvalidRequest("agent_uid: only a team-owned schedule runs as an agent")
        await _check_agent(conn, team, agent_uid)
    return {
        "name": body["name"],
        "cron_schedule": cron.check(body["cron_schedule"]),
        "prompt": prompt,
        "agent_config": config,
        "agent_uid": agent_uid,
        "metadata": _metadata(body.get("metadata")),
        "mode": body.get("mode") or "normal",
    }


def _metadata(value: dict[str, str] | None) -> dict[str, str] | None:
    if not value:
        return None
    if len(value) > MAX_METADATA:
        raise InvalidRequest(f"metadata: at most {MAX_METADATA} keys")
    for key, item in value.items():
        if not METADATA_KEY.fullmatch(key):
            raise InvalidRequest(f"metadata.{key[:64]}: keys are 1-64 characters of [a-zA-Z0-9._-]")
        if len(item.encode()) > 256 or "\x00" in item:
            raise InvalidRequest(f"metadata.{key}: at most 256 bytes of UTF-8, no NUL")
    return value


async def _check_agent(conn: AsyncConnection, team: str, agent_uid: str) -> None:
    a = t.agents
    query = select(a.c.uid).where(a.c.uid == agent_uid, a.c.team_uid == team)
    if (await conn.execute(query)).first() is None:
        raise InvalidRequest(f"agent_uid: no agent {agent_uid} in the schedule's team")


async def _load(conn: AsyncConnection, uid: str) -> Row[Any]:
    row = (await conn.execute(select(s).where(s.c.uid == uid))).first()
    if row is None:
        raise NotFound(f"schedule_id: no schedule {uid}")
    return row
