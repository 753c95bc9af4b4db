"""Runs executed by runners (docs/runs-and-tasks.md, "Runners").

A runner (an agent API key; `gateway runner` is the reference one) registers, then claims QUEUED
runs of its team with a lease. While it holds a run it renews the lease (heartbeat), reports
progress, conversation messages, artifacts and usage, and finishes it. Every call about a run
checks that the caller still holds it: a run finished, taken back after its lease ran out, or
given to another runner answers 409 `lease_lost`, never a second state change.

A lease that is not renewed returns the run to QUEUED for another runner; after MAX_ATTEMPTS
claims the run is FAILED instead (`lease_expired`). Expired leases are collected whenever a
runner claims or touches a run, so with runners polling, a dead runner's runs move on within a
lease and a poll.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import msgspec
from msgspec import UNSET, structs
from sqlalchemy import Row, Select, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.accounts.identities import Principal
from gateway.backends.key_cache import KeyCache
from gateway.errors import Forbidden, InvalidRequest, LeaseLost, NotFound, ServiceError
from gateway.platform.analytics import pull_requests
from gateway.platform.runners.models import (
    MAX_CLAIM,
    ArtifactAdded,
    ClaimedRun,
    HeartbeatResult,
    NewArtifact,
    ReportedMessage,
    RunMessage,
    RunStatus,
    StoredArtifact,
    Worker,
)
from gateway.platform.runs import timeline as run_timeline
from gateway.platform.runs.models import (
    AgentConfig,
    ArtifactItemData,
    RunArtifact,
    RunRecord,
    StatusMessage,
    file_artifact,
)
from gateway.platform.runs.records import TERMINAL, find_run, json_column, load_run
from gateway.platform.runs.worker_pinning import POOL
from gateway.platform.tasks import tasks
from gateway.store import tables as t
from gateway.store.types import utcnow

MAX_ATTEMPTS = 3  # claims of one run in all; a third expired lease fails it
HELD = ("CLAIMED", "PENDING", "INPROGRESS", "BLOCKED")  # states a runner works in
MAX_STATUS = 500  # characters of a status message
PAYLOAD_NAME = "event-payload.json"
PRESENCE_PRECISION = timedelta(seconds=1)  # how stale a runner's last_seen_at may be

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
# follow-ups a user sent to the run (not the runner's own messages, nor interrupts)
FOLLOW_UPS = ("queued", "resumed", "injected")
# what a run held by no runner has of its lease
FREE = {"runner_uid": None, "lease_expires_at": None, "lease_renewed_at": None}
# a run without a debug session (runners/debug_sessions.py), and the timeline entry of one ending
NO_DEBUG = {"debug_session": None, "debug_runner_uid": None}
DEBUG_ENDED = "DEBUG_ENDED"


@dataclass(frozen=True, slots=True)
class Runner:
    uid: str
    team_uid: str
    agent_uid: str
    factory_uid: str | None
    worker_id: str | None = None  # a self-hosted worker: claims only the runs pinned to it
    debug_sessions: bool = False  # opens debug sessions of the runs it failed


# --- runners ---------------------------------------------------------------------------------


def _agent(principal: Principal) -> None:
    if principal.kind != "agent":
        raise Forbidden("Authorization: runners authenticate with an agent API key")


async def register(
    conn: AsyncConnection,
    principal: Principal,
    *,
    name: str,
    host: str | None,
    factory_uid: str | None,
    concurrency: int,
    version: str | None,
    worker_id: str | None = None,
    debug_sessions: bool = False,
) -> Runner:
    """A new runner of the agent's team (the active team when the key has several)."""
    _agent(principal)
    team_uid = principal.active_team_uid or min(principal.team_uids, default=None)
    if team_uid is None:
        raise Forbidden("Authorization: the agent belongs to no team")
    if worker_id == POOL:
        raise InvalidRequest(f"worker_id: {POOL!r} names the team's pool; omit it to join it")
    if factory_uid is not None:
        factory = (
            await conn.execute(select(t.factories).where(t.factories.c.uid == factory_uid))
        ).first()
        if factory is None or factory.team_uid != team_uid:
            raise NotFound(f"factory_uid: {factory_uid} is not a factory of the runner's team")
    now = utcnow()
    uid = ids.new_id("rnr")
    await conn.execute(
        insert(t.runners).values(
            uid=uid,
            team_uid=team_uid,
            agent_uid=principal.uid,
            name=name,
            host=host,
            factory_uid=factory_uid,
            concurrency=concurrency,
            version=version,
            started_at=now,
            last_seen_at=now,
            worker_id=worker_id,
            debug_sessions=debug_sessions,
        )
    )
    return Runner(uid, team_uid, principal.uid, factory_uid, worker_id, debug_sessions)


async def runner_of(
    conn: AsyncConnection,
    principal: Principal,
    runner_uid: str,
    seen_lately: KeyCache | None = None,
) -> Runner:
    """The caller's runner, seen now (its presence); 404 for anyone else's. With `seen_lately`
    (runners this process saw, kept while their recorded presence is fresh: at most
    PRESENCE_PRECISION), a runner found there costs no query."""
    _agent(principal)
    hit = seen_lately.get(runner_uid) if seen_lately is not None else None
    if isinstance(hit, Runner) and hit.agent_uid == principal.uid:
        return hit
    generation = seen_lately.generation if seen_lately is not None else 0
    row = (await conn.execute(select(t.runners).where(t.runners.c.uid == runner_uid))).first()
    if row is None or row.agent_uid != principal.uid:
        raise NotFound(f"runner_uid: {runner_uid} is not a runner of this agent")
    now = utcnow()
    seen = row.last_seen_at
    if now - seen > PRESENCE_PRECISION:  # one write a second is presence enough
        await conn.execute(
            update(t.runners).where(t.runners.c.uid == runner_uid).values(last_seen_at=now)
        )
        seen = now
    runner = Runner(
        row.uid, row.team_uid, row.agent_uid, row.factory_uid, row.worker_id, row.debug_sessions
    )
    if seen_lately is not None:  # until its presence is due again (a runner never changes)
        fresh_for = (seen + PRESENCE_PRECISION - now).total_seconds()
        seen_lately.put(runner_uid, runner, runner.agent_uid, generation, ttl_s=fresh_for)
    return runner


async def list_runners(conn: AsyncConnection, principal: Principal, lease_s: float) -> list[Worker]:
    """The runners of the caller's teams seen within two leases, newest first, with the runs
    they hold; `online` while seen within one lease (heartbeats may be a moment stale)."""
    now = utcnow()
    recent = now - timedelta(seconds=2 * lease_s)
    rows = (
        await conn.execute(
            select(t.runners)
            .where(
                t.runners.c.team_uid.in_(principal.team_uids), t.runners.c.last_seen_at >= recent
            )
            .order_by(t.runners.c.last_seen_at.desc(), t.runners.c.uid)
        )
    ).all()
    held: dict[str, int] = {}
    if rows:
        counts = await conn.execute(
            select(r.c.runner_uid, func.count())
            .where(r.c.runner_uid.in_([row.uid for row in rows]), r.c.state.in_(HELD))
            .group_by(r.c.runner_uid)
        )
        held = {uid: count for uid, count in counts.all()}
    online_since = now - timedelta(seconds=lease_s)
    return [
        Worker(
            uid=row.uid,
            name=row.name,
            host=row.host,
            agent_uid=row.agent_uid,
            factory_uid=row.factory_uid,
            concurrency=row.concurrency,
            version=row.version,
            started_at=row.started_at,
            last_seen_at=row.last_seen_at,
            online=row.last_seen_at >= online_since,
            runs_held=held.get(row.uid, 0),
            worker_id=row.worker_id,
        )
        for row in rows
    ]


# --- leases ----------------------------------------------------------------------------------


async def expire_leases(conn: AsyncConnection) -> None:
    """Runs whose lease ran out: back to QUEUED, or FAILED after MAX_ATTEMPTS claims; a run
    that ended meanwhile (cancelled) only loses its holder."""
    now = utcnow()
    query = (
        select(r.c.run_id, r.c.state, r.c.attempts, r.c.runner_uid, r.c.debug_session)
        .where(r.c.lease_expires_at.is_not(None), r.c.lease_expires_at < now)
        .with_for_update(skip_locked=True)
    )
    expired = (await conn.execute(query)).all()
    if not expired:
        return
    ended = [row.run_id for row in expired if row.state in TERMINAL]
    failed = [row for row in expired if row.state not in TERMINAL and row.attempts >= MAX_ATTEMPTS]
    requeued = [row for row in expired if row.state not in TERMINAL and row.attempts < MAX_ATTEMPTS]
    if ended:  # a debug session among them is over
        await conn.execute(update(r).where(r.c.run_id.in_(ended)).values(**FREE, **NO_DEBUG))
        lost = [row for row in expired if row.debug_session == "open"]
        await run_timeline.record_entries(
            conn,
            [
                run_timeline.entry(
                    row.run_id, DEBUG_ENDED, now, runner_uid=row.runner_uid, reason="lease expired"
                )
                for row in lost
            ],
        )
    if requeued:
        await conn.execute(
            update(r)
            .where(r.c.run_id.in_([row.run_id for row in requeued]))
            .values(state="QUEUED", updated_at=now, **FREE)
        )
        for row in requeued:
            await run_timeline.record(
                conn,
                [row.run_id],
                "QUEUED",
                now,
                runner_uid=row.runner_uid,
                reason=f"lease expired (attempt {row.attempts} of {MAX_ATTEMPTS})",
            )
    for row in failed:
        message = (
            f"the run's lease expired {row.attempts} times: its runners stopped renewing it "
            "(crashed, killed or cut off)"
        )
        await conn.execute(
            update(r)
            .where(r.c.run_id == row.run_id)
            .values(
                state="FAILED",
                failed_at=now,
                updated_at=now,
                status_message=json_column(StatusMessage(message, "lease_expired", True)),
                **FREE,
            )
        )
        await run_timeline.record(
            conn, [row.run_id], "FAILED", now, runner_uid=row.runner_uid, reason=message
        )


async def claim(
    conn: AsyncConnection, runner: Runner, lease_s: float, limit: int = 1
) -> list[ClaimedRun]:
    """Up to `limit` QUEUED cloud runs of the runner's team (and factory), oldest first, each
    CLAIMED with a lease of `lease_s` seconds, with the follow-ups users sent them."""
    await expire_leases(conn)
    run_ids = await _pick(conn, runner, limit)
    if not run_ids:
        return []
    now = utcnow()
    claimed = await conn.execute(
        update(r)
        .where(r.c.run_id.in_(run_ids), r.c.state == "QUEUED")
        .values(
            state="CLAIMED",
            runner_uid=runner.uid,
            lease_expires_at=now + timedelta(seconds=lease_s),
            lease_renewed_at=now,
            attempts=r.c.attempts + 1,
            updated_at=now,
        )
        .returning(*CLAIMED_COLUMNS)  # read back in the same statement
    )
    rows = sorted(claimed.all(), key=lambda row: (row.created_at, row.run_id))
    claimed_ids = [row.run_id for row in rows]
    await run_timeline.record(conn, claimed_ids, "CLAIMED", now, runner_uid=runner.uid)
    started_by_deliveries = [
        (row.run_id, row.conversation_id) for row in rows if row.delivery_id is not None
    ]
    payloads = await with_event_payload(conn, started_by_deliveries)
    messages = await follow_ups(conn, claimed_ids)
    return [
        claimed_run(
            row,
            messages.get(row.run_id, []),
            event_payload=row.run_id in payloads,
            mode=execution_mode(row.mode, messages.get(row.run_id, [])),
        )
        for row in rows
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


async def _pick(conn: AsyncConnection, runner: Runner, limit: int) -> list[str]:
    """The runs `claim` takes, locked (skipping those another claim locked)."""
    pick = select(r.c.run_id).where(
        r.c.state == "QUEUED", r.c.team_uid == runner.team_uid, r.c.run_type == "cloud"
    )
    if runner.factory_uid is not None:
        pick = pick.where(r.c.factory_uid == runner.factory_uid)
    # a run pinned to a worker goes to that worker alone; the pool takes the others
    pick = pick.where(
        r.c.worker_host.is_(None)
        if runner.worker_id is None
        else r.c.worker_host == runner.worker_id
    )
    pick = (
        pick.order_by(r.c.created_at, r.c.run_id)
        .limit(max(1, min(limit, MAX_CLAIM)))
        .with_for_update(skip_locked=True)
    )
    # picked first, then claimed: inside the UPDATE, PostgreSQL may run the LIMITed subquery
    # more than once and claim more than `limit` runs
    return list((await conn.execute(pick)).scalars())


async def held_run(conn: AsyncConnection, runner: Runner, run_id: str) -> RunRecord:
    """The run, locked, while `runner` holds it; 404 outside its team, 409 `lease_lost` when
    it finished, was taken back or is held by another runner."""
    held = (await held_runs(conn, runner, [run_id]))[run_id]
    if isinstance(held, ServiceError):
        raise held
    return held


async def held_runs(
    conn: AsyncConnection, runner: Runner, run_ids: list[str]
) -> dict[str, RunRecord | ServiceError]:
    """`held_run` for several runs at once (one SELECT): each run, locked, or the error a call
    about it alone would answer."""
    query = select(r).where(r.c.run_id.in_(run_ids)).order_by(r.c.run_id).with_for_update()
    found = await _locked(conn, query)
    now = utcnow()
    leases = [run.lease_expires_at for run in found.values() if run.lease_expires_at is not None]
    if any(expires < now for expires in leases):
        await expire_leases(conn)  # these among them: requeued (or failed) now
        found = await _locked(conn, query)
    return {run_id: _held_by(found.get(run_id), runner, run_id) for run_id in run_ids}


async def _locked(conn: AsyncConnection, query: Select[Any]) -> dict[str, RunRecord]:
    return {row.run_id: RunRecord.from_row(row) for row in await conn.execute(query)}


def _held_by(run: RunRecord | None, runner: Runner, run_id: str) -> RunRecord | ServiceError:
    if run is None or run.team_uid != runner.team_uid:
        return NotFound(f"run_id: {run_id} not found")
    if run.runner_uid != runner.uid:
        return lease_lost(runner, run_id, run.state)
    return run


def lease_lost(runner: Runner, run_id: str, state: str) -> LeaseLost:
    return LeaseLost(
        f"run_id: runner {runner.uid} does not hold run {run_id} (it is {state}; "
        "finished, taken back after its lease expired, or claimed by another runner)"
    )


async def heartbeat(
    conn: AsyncConnection, runner: Runner, run_id: str, lease_s: float
) -> HeartbeatResult:
    """Renews the lease; says whether the run was cancelled or interrupted since the last one,
    and hands over the follow-ups sent into its live session since then."""
    run = await held_run(conn, runner, run_id)
    now = utcnow()
    since = run.lease_renewed_at or run.created_at
    interrupts = await conn.execute(
        select(func.count())
        .select_from(t.run_messages)
        .where(
            t.run_messages.c.run_id == run_id,
            t.run_messages.c.routing == "interrupt",
            t.run_messages.c.created_at > since,
        )
    )
    # into a live session: injected follow-ups; into a debug session: the debug ones
    routings = ("debug",) if run.debug_session == "open" else ("injected",)
    injected = await follow_ups(conn, [run_id], since=since, routings=routings)
    expires = now + timedelta(seconds=lease_s)
    await conn.execute(
        update(r).where(r.c.run_id == run_id).values(lease_expires_at=expires, lease_renewed_at=now)
    )
    return HeartbeatResult(
        run_id=run_id,
        state=run.state,
        lease_expires_at=expires,
        cancel_requested=run.state == "CANCELLED",
        interrupt_requested=bool(interrupts.scalar_one()),
        messages=injected.get(run_id, []),
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


async def progress(
    conn: AsyncConnection,
    runner: Runner,
    run_id: str,
    *,
    state: Literal["PENDING", "INPROGRESS", "BLOCKED"] | None,
    status_message: str | None,
    session_id: str | None,
    session_link: str | None,
) -> RunStatus:
    """Moves a held run along (CLAIMED -> PENDING, CLAIMED, PENDING or BLOCKED -> INPROGRESS,
    INPROGRESS -> BLOCKED) and
    records what it is doing; a cancelled run keeps its state."""
    run = await held_run(conn, runner, run_id)
    now = utcnow()
    ended = run.state in TERMINAL
    target = None if ended or state == run.state else state
    if target is not None:
        allowed = {
            "PENDING": ("CLAIMED",),
            "INPROGRESS": ("CLAIMED", "PENDING", "BLOCKED"),
            "BLOCKED": ("INPROGRESS",),
        }[target]
        if run.state not in allowed:
            raise InvalidRequest(f"state: a {run.state} run cannot become {target}")
    starts = target == "INPROGRESS" and run.started_at is None
    status = None if ended or status_message is None else status_of(status_message)
    await conn.execute(
        update(r)
        .where(r.c.run_id == run_id)
        .values(  # a column set to itself keeps its value
            updated_at=now,
            state=r.c.state if target is None else target,
            started_at=now if starts else r.c.started_at,
            status_message=r.c.status_message if status is None else json_column(status),
            session_id=r.c.session_id if session_id is None else session_id,
            session_link=r.c.session_link if session_link is None else session_link,
        )
    )
    if target is not None:  # after the update: the inbox reads the new status message
        await run_timeline.record(conn, [run_id], target, now, runner_uid=runner.uid)
    return RunStatus.of(await load_run(conn, run_id))


def status_of(message: str, error_code: str | None = None) -> StatusMessage:
    return StatusMessage(message[:MAX_STATUS], error_code, False)


async def append_messages(
    conn: AsyncConnection, runner: Runner, run_id: str, messages: list[ReportedMessage]
) -> int:
    """Conversation messages the run produced (what was said, or an action taken), in order."""
    await held_run(conn, runner, run_id)
    for i, message in enumerate(messages):
        skill = None if message.action is None else message.action.input
        if skill is not None and skill.skill_path is None and skill.bundled_skill_id is None:
            raise InvalidRequest(
                f"messages[{i}].action.input: give skill_path, bundled_skill_id or both"
            )
    now = utcnow()
    await conn.execute(
        insert(t.run_messages),
        [
            {
                "id": ids.new_id("msg"),
                "run_id": run_id,
                "message": message.text,
                "mode": message.role,
                "routing": "agent",
                "action": None if message.action is None else msgspec.to_builtins(message.action),
                # a microsecond apart: the messages of one report keep their order when read
                "created_at": now + timedelta(microseconds=i),
            }
            for i, message in enumerate(messages)
        ],
    )
    return len(messages)


async def add_artifact(
    conn: AsyncConnection, runner: Runner, run_id: str, artifact: NewArtifact
) -> ArtifactAdded:
    """A FILE (content stored) or PULL_REQUEST artifact of a held run; it joins the run's
    `artifacts` and, for a factory task's run, the task's outputs."""
    run = await held_run(conn, runner, run_id)
    uid = await store_artifact(conn, run, artifact)
    return ArtifactAdded(uid, artifact.artifact_type)


async def store_artifact(conn: AsyncConnection, run: RunRecord, artifact: NewArtifact) -> str:
    """Stores the artifact; returns its uid."""
    now = utcnow()
    uid = ids.new_uuid()
    columns = structs.asdict(artifact)
    await conn.execute(
        insert(t.run_artifacts).values(
            artifact_uid=uid, run_id=run.run_id, created_at=now, **columns
        )
    )
    kind = artifact.artifact_type
    if kind == "PULL_REQUEST":
        await pull_requests.record(
            conn,
            run,
            uid,
            now,
            url=artifact.url,
            title=artifact.title,
            branch=artifact.branch,
            state=artifact.pr_state,
        )
    if kind != "TRANSCRIPT":
        listed = [*(run.artifacts or []), _artifact_item(uid, now, artifact)]
        await conn.execute(
            update(r).where(r.c.run_id == run.run_id).values(artifacts=json_column(listed))
        )
        task = await tasks.live_task_of(conn, await _root_conversation(conn, run))
        if task is not None:
            url = artifact.url if kind == "PULL_REQUEST" else f"artifact:{uid}"
            title = artifact.title or artifact.filename
            await tasks.add_output(conn, task.uid, kind.lower(), title, url)
    return uid


async def _root_conversation(conn: AsyncConnection, run: RunRecord) -> str:
    """A task is bound to its root run's conversation (tasks.task_by_run)."""
    root = run if run.parent_run_id is None else await find_run(conn, run.root_run_id)
    return (root or run).conversation_id


def _artifact_item(uid: str, at: datetime, artifact: NewArtifact) -> RunArtifact:
    """The run's `artifacts` entry, in the official client's ArtifactItem shape."""
    if artifact.artifact_type == "PULL_REQUEST":
        data = ArtifactItemData(
            url=artifact.url or "",
            branch=artifact.branch or "",
            title=artifact.title or UNSET,
            state=artifact.pr_state or UNSET,
        )
        return RunArtifact(artifact_type="PULL_REQUEST", created_at=at.isoformat(), data=data)
    filename = artifact.filename or ""
    return file_artifact(
        uid,
        at,
        filename,
        artifact.mime_type or "",
        artifact.size or 0,
        filepath=artifact.filepath,
        description=artifact.description,
        title=artifact.title,
    )


async def release(conn: AsyncConnection, runner: Runner, run_id: str, reason: str) -> RunStatus:
    """Gives a held run back (the runner is stopping): QUEUED again for another runner; the
    claim still counts as an attempt. A cancelled run only loses its holder."""
    run = await held_run(conn, runner, run_id)
    now = utcnow()
    requeued = run.state not in TERMINAL
    state = "QUEUED" if requeued else DEBUG_ENDED if run.debug_session == "open" else None
    if state is not None:
        await run_timeline.record(conn, [run_id], state, now, runner_uid=runner.uid, reason=reason)
    await conn.execute(
        update(r)
        .where(r.c.run_id == run_id)
        .values(state="QUEUED" if requeued else r.c.state, updated_at=now, **FREE, **NO_DEBUG)
    )
    return RunStatus.of(await load_run(conn, run_id))


# --- what runners and users read ---------------------------------------------------------------


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


async def artifact(conn: AsyncConnection, artifact_uid: str) -> tuple[StoredArtifact, RunRecord]:
    """(artifact, its run); 404 when unknown. A webhook run's payload attachment, listed among
    its artifacts as a FILE, is one too."""
    a = t.run_artifacts
    row = (await conn.execute(select(a).where(a.c.artifact_uid == artifact_uid))).first()
    found = StoredArtifact.from_row(row) if row is not None else None
    if found is None and artifact_uid.startswith("att_"):
        found = await _attachment_artifact(conn, artifact_uid)
    run = None if found is None else await find_run(conn, found.run_id)
    if found is None or run is None:
        raise NotFound(f"artifact_uid: {artifact_uid} not found")
    return found, run


async def _attachment_artifact(conn: AsyncConnection, attachment_id: str) -> StoredArtifact | None:
    """A file a run came with, listed among its artifacts as a FILE: a webhook run's
    event-payload.json, whose content is the delivery's payload (stored once, in the delivery
    log), or a file in the attachment store (content None here: it is read from there,
    gateway/blobs). None for a prepared attachment whose content has not been uploaded."""
    a, d = t.attachments, t.deliveries
    query = (
        select(a, d.c.payload)
        .select_from(a.outerjoin(d, d.c.delivery_id == a.c.delivery_id))
        .where(
            a.c.attachment_id == attachment_id,
            or_(a.c.delivery_id.is_not(None), a.c.blob_key.is_not(None)),
        )
    )
    row = (await conn.execute(query)).first()
    if row is None:
        return None
    return StoredArtifact(
        artifact_type="FILE",
        artifact_uid=row.attachment_id,
        run_id=row.run_id,
        created_at=row.created_at,
        filename=row.file_name,
        mime_type=row.content_type,
        size=row.size,
        content=None if row.payload is None else bytes(row.payload),
    )


async def transcript_uid(conn: AsyncConnection, run_id: str) -> str | None:
    """The uid of the run's newest transcript."""
    a = t.run_artifacts
    query = (
        select(a.c.artifact_uid)
        .where(a.c.run_id == run_id, a.c.artifact_type == "TRANSCRIPT")
        .order_by(a.c.created_at.desc())
        .limit(1)
    )
    uid: str | None = (await conn.execute(query)).scalar()
    return uid
