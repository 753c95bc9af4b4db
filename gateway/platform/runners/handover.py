"""What a runner is handed with a run: at its claim, the run (`claimed_run`), the follow-ups
users sent it and the mode of this execution; at each heartbeat, the follow-ups sent into its
live session; for a run a delivery started, whether its event payload can be fetched."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

import msgspec
from msgspec import UnsetType
from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.kernel.security import SecretBox
from gateway.platform.runners.models import ClaimedRun, RunMessage
from gateway.platform.runs.conversations.models import FOLLOW_UPS
from gateway.platform.runs.record.models import AgentConfig, RunRecord

PAYLOAD_NAME = "event-payload.json"
r = t.runs
# what a claim reads back of each run: what its runner is told (and the order of the runs)
CLAIMED_COLUMNS = [
    r.c[name]
    for name in (
        "run_id",
        "title",
        "prompt",
        "state",
        "attempts",
        "lease_expires_at",
        "conversation_id",
        "factory_uid",
        "source",
        "metadata",
        "agent_config",
        "delivery_id",
        "created_at",
        "mode",
    )
]


def claimed_run(
    row: Row[Any],
    messages: list[RunMessage],
    *,
    event_payload: bool,
    mode: str,
    session: Literal["run", "debug"] = "run",
) -> ClaimedRun:
    """What a runner is told of a run it claimed, from the row of its CLAIMED_COLUMNS."""
    return ClaimedRun(
        run_id=row.run_id,
        title=row.title,
        prompt=row.prompt,
        state=row.state,
        attempt=row.attempts,
        lease_expires_at=row.lease_expires_at,
        conversation_id=row.conversation_id,
        factory_uid=row.factory_uid,
        source=row.source,
        metadata=row.metadata,
        agent_config=(
            None if row.agent_config is None else msgspec.convert(row.agent_config, AgentConfig)
        ),
        event_payload=event_payload,
        mode=mode,
        messages=messages,
        session=session,
    )


async def follow_ups(
    conn: AsyncConnection,
    run_ids: list[str],
    *,
    since: datetime | None = None,
    routings: tuple[str, ...] = FOLLOW_UPS,
) -> dict[str, list[RunMessage]]:
    """Per run, the follow-ups users sent to it (after `since`), oldest first."""
    if not run_ids:
        return {}
    m = t.run_messages
    query = select(m).where(m.c.run_id.in_(run_ids), m.c.routing.in_(routings))
    if since is not None:
        query = query.where(m.c.created_at > since)
    found: dict[str, list[RunMessage]] = {}
    for row in await conn.execute(query.order_by(m.c.created_at, m.c.id)):
        found.setdefault(row.run_id, []).append(
            RunMessage(
                id=row.id,
                message=row.message,
                attachments=row.attachments or [],
                mode=row.mode,
                routing=row.routing,
                created_at=row.created_at,
            )
        )
    return found


def execution_mode(run_mode: str | None, messages: list[RunMessage]) -> str:
    """The mode an execution runs in: that of the newest follow-up queued for it which names
    one (those since the follow-up that resumed the ended run, or before the first start; one
    sent into a live session keeps the session's mode), else the run's own (`run_mode`)."""
    resumed = [i for i, m in enumerate(messages) if m.routing == "resumed"]
    current = messages[resumed[-1] :] if resumed else messages
    for message in reversed(current):
        if message.routing in ("queued", "resumed") and message.mode:
            return message.mode
    return run_mode or "normal"


async def event_payload(conn: AsyncConnection, run: RunRecord) -> bytes | None:
    """The payload of the delivery that started a webhook run (its event-payload.json)."""
    a, d = t.attachments, t.deliveries
    query = (
        select(d.c.payload)
        .select_from(a.join(d, d.c.delivery_id == a.c.delivery_id))
        # by conversation (indexed), then run: a conversation holds few attachments
        .where(
            a.c.conversation_id == run.conversation_id,
            a.c.run_id == run.run_id,
            a.c.file_name == PAYLOAD_NAME,
            a.c.delivery_id.is_not(None),
        )
    )
    payload = (await conn.execute(query)).scalar()
    return None if payload is None else bytes(payload)


async def with_event_payload(conn: AsyncConnection, runs: Sequence[tuple[str, str]]) -> set[str]:
    """Which of `runs` (run id, conversation id: runs a delivery started) have an event
    payload, in one query."""
    if not runs:
        return set()
    a = t.attachments
    query = select(a.c.run_id).where(
        a.c.conversation_id.in_({conversation_id for _, conversation_id in runs}),
        a.c.run_id.in_([run_id for run_id, _ in runs]),
        a.c.file_name == PAYLOAD_NAME,
        a.c.delivery_id.is_not(None),
    )
    return set((await conn.execute(query)).scalars())


async def with_secrets(
    conn: AsyncConnection, team_uid: str, runs: Sequence[ClaimedRun], box: SecretBox
) -> None:
    """Fills each claimed run's `secrets`: the values of the team's managed secrets its
    configuration names (`agent_config.secrets`, and the harness's key,
    `agent_config.harness.auth.secret_name`), for the runner holding the claim alone."""
    wanted = {name for run in runs for name in secret_names(run.agent_config)}
    if not wanted:
        return
    s = t.team_secrets
    query = select(s.c.name, s.c.value_encrypted).where(
        s.c.team_uid == team_uid, s.c.name.in_(sorted(wanted))
    )
    values = {row.name: box.decrypt(row.value_encrypted) for row in await conn.execute(query)}
    for run in runs:
        names = secret_names(run.agent_config)
        run.secrets = {name: values[name] for name in names if name in values}


def secret_names(config: AgentConfig | None) -> list[str]:
    """The managed secrets a run's configuration names: its `secrets`, then its harness's key."""
    if config is None:
        return []
    names = list(config.secrets) if isinstance(config.secrets, list) else []
    harness = config.harness
    if not isinstance(harness, UnsetType) and not isinstance(harness.auth, UnsetType):
        key = harness.auth.secret_name
        if harness.auth.source == "managedSecret" and isinstance(key, str) and key not in names:
            names.append(key)
    return names
