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
from dataclasses import asdict, dataclass
from typing import Any

import msgspec
from sqlalchemy import ColumnElement, Row, delete, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.catalog import ModelSpec
from gateway.kernel.errors import Forbidden, InvalidRequest, NotFound
from gateway.kernel.types import JsonObject
from gateway.platform.runs.creation.agent_config import parse_config
from gateway.platform.runs.creation.worker_pinning import check_worker_host
from gateway.platform.runs.record.items import creators
from gateway.platform.runs.record.models import MAX_PROMPT
from gateway.platform.schedules import cron
from gateway.platform.schedules.models import ScheduleCreate, ScheduledAgent, ScheduleUpdate

s = t.scheduled_agents
METADATA_KEY = re.compile(r"[a-zA-Z0-9._-]{1,64}")
MAX_METADATA = 20


@dataclass(frozen=True, slots=True)
class _Columns:
    """What a create or an update sets, validated."""

    name: str
    cron_schedule: str
    prompt: str | None
    agent_config: JsonObject | None
    agent_uid: str | None
    metadata: dict[str, str] | None
    mode: str


def require_user(principal: Principal) -> None:
    if principal.kind != "user":
        raise Forbidden("Authorization: managing schedules needs user credentials")


async def create_schedule(
    conn: AsyncConnection, principal: Principal, spec: ScheduleCreate, models: Sequence[ModelSpec]
) -> ScheduledAgent:
    require_user(principal)
    team_owned = spec.team
    if team_owned is None:  # the client's default: team-owned for a user of a single team
        team_owned = principal.active_team_uid is not None or len(principal.team_uids) == 1
    team = _team(principal, team_owned)
    columns = await _checked(conn, spec, models, team, team_owned, current=None)
    uid, now = ids.new_id("sched"), utcnow()
    await conn.execute(
        insert(s).values(
            uid=uid,
            team_uid=team,
            owner_kind="team" if team_owned else "user",
            enabled=spec.enabled,
            next_run_at=cron.next_slot(columns.cron_schedule, now) if spec.enabled else None,
            created_by_kind=principal.kind,
            created_by_uid=principal.uid,
            updated_by_kind=principal.kind,
            updated_by_uid=principal.uid,
            created_at=now,
            updated_at=now,
            **asdict(columns),
        )
    )
    return await _load(conn, uid)


async def list_schedules(conn: AsyncConnection, principal: Principal) -> list[ScheduledAgent]:
    """The schedules the caller sees (of the active team when one is selected), by name."""
    teams = [principal.active_team_uid] if principal.active_team_uid else principal.team_uids
    query = select(s).where(_visible(principal), s.c.team_uid.in_(sorted(teams)))
    return await _views(conn, (await conn.execute(query.order_by(s.c.name, s.c.uid))).all())


async def get_schedule(conn: AsyncConnection, principal: Principal, uid: str) -> ScheduledAgent:
    """404 for a schedule the caller cannot see, as for one that does not exist."""
    (schedule,) = await _views(conn, [await _visible_row(conn, principal, uid)])
    return schedule


async def _visible_row(conn: AsyncConnection, principal: Principal, uid: str) -> Row[Any]:
    query = select(s).where(s.c.uid == uid, _visible(principal))
    row = (await conn.execute(query)).first()
    if row is None:
        raise NotFound(f"schedule_id: no schedule {uid}")
    return row


async def update_schedule(
    conn: AsyncConnection,
    principal: Principal,
    uid: str,
    spec: ScheduleUpdate,
    models: Sequence[ModelSpec],
) -> ScheduledAgent:
    """Replaces the schedule's fields (PUT); an absent agent_config keeps the current one. A new
    cron expression or enabling sets the next slot from now."""
    require_user(principal)
    row = await _visible_row(conn, principal, uid)
    columns = await _checked(
        conn, spec, models, row.team_uid, row.owner_kind == "team", current=row.agent_config
    )
    now = utcnow()
    values = asdict(columns) | {"enabled": spec.enabled, "updated_at": now}
    values |= {"updated_by_kind": principal.kind, "updated_by_uid": principal.uid}
    if not spec.enabled:
        values["next_run_at"] = None
    elif not row.enabled or columns.cron_schedule != row.cron_schedule:
        values["next_run_at"] = cron.next_slot(columns.cron_schedule, now)
    await conn.execute(update(s).where(s.c.uid == uid).values(**values))
    return await _load(conn, uid)


async def set_enabled(
    conn: AsyncConnection, principal: Principal, uid: str, enabled: bool
) -> ScheduledAgent:
    """Pause (no further slots) or resume (the first slot after now; missed ones are skipped)."""
    require_user(principal)
    row = await _visible_row(conn, principal, uid)
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
    await _visible_row(conn, principal, uid)
    await conn.execute(delete(s).where(s.c.uid == uid))


async def _views(conn: AsyncConnection, rows: Sequence[Row[Any]]) -> list[ScheduledAgent]:
    """ScheduledAgentItem of the official client for each row."""
    people = await creators(
        conn,
        [
            (kind, uid)
            for row in rows
            for kind, uid in (
                (row.created_by_kind, row.created_by_uid),
                (row.updated_by_kind, row.updated_by_uid),
            )
        ],
    )
    return [ScheduledAgent.from_row(row, people) for row in rows]


def _visible(principal: Principal) -> ColumnElement[bool]:
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
    spec: ScheduleCreate | ScheduleUpdate,
    models: Sequence[ModelSpec],
    team: str,
    team_owned: bool,
    *,
    current: JsonObject | None,
) -> _Columns:
    """The columns `spec` sets, validated; `current`: the schedule's agent config, kept when
    `spec` gives none."""
    config = current
    if spec.agent_config is not None:
        # the stored config is the runs' own form of it (runs/creation/agent_config.parse_config)
        parsed = parse_config(spec.agent_config, models, "agent_config")
        await check_worker_host(conn, team, parsed, "agent_config.worker_host")
        config = None if parsed is None else msgspec.to_builtins(parsed)
    prompt = spec.prompt or None
    if prompt is None and not (config or {}).get("skill_spec"):
        raise InvalidRequest("prompt: required unless agent_config.skill_spec is given")
    if prompt is not None and len(prompt) > MAX_PROMPT:
        raise InvalidRequest(f"prompt: longer than {MAX_PROMPT} characters")
    agent_uid = spec.agent_uid or None
    if agent_uid is not None:
        if not team_owned:
            raise InvalidRequest("agent_uid: only a team-owned schedule runs as an agent")
        await _check_agent(conn, team, agent_uid)
    return _Columns(
        name=spec.name,
        cron_schedule=cron.check(spec.cron_schedule),
        prompt=prompt,
        agent_config=config,
        agent_uid=agent_uid,
        metadata=_metadata(spec.metadata),
        mode=spec.mode or "normal",
    )


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


async def _load(conn: AsyncConnection, uid: str) -> ScheduledAgent:
    row = (await conn.execute(select(s).where(s.c.uid == uid))).first()
    if row is None:
        raise NotFound(f"schedule_id: no schedule {uid}")
    (schedule,) = await _views(conn, [row])
    return schedule
