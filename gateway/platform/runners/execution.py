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

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Row, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.accounts.identities import Principal
from gateway.backends.key_cache import KeyCache
from gateway.errors import Forbidden, InvalidRequest, LeaseLost, NotFound, ServiceError
from gateway.platform.analytics import pr_costs, pull_requests
from gateway.platform.runs import timeline as run_timeline
from gateway.platform.runs.records import TERMINAL, find_run, load_run
from gateway.platform.tasks import tasks
from gateway.store import tables as t
from gateway.store.types import utcnow

MAX_ATTEMPTS = 3  # claims of one run in all; a third expired lease fails it
HELD = ("CLAIMED", "INPROGRESS", "BLOCKED")  # states a runner works in
MAX_CLAIM = 50  # runs per claim call: a runner of many short runs takes them in batches
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
Outcome = Literal["SUCCEEDED", "FAILED", "CANCELLED"]


@dataclass(frozen=True, slots=True)
class Runner:
    uid: str
    team_uid: str
    agent_uid: str
    factory_uid: str | None


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
) -> Runner:
    """A new runner of the agent's team (the active team when the key has several)."""
    _agent(principal)
    team_uid = principal.active_team_uid or min(principal.team_uids, default=None)
    if team_uid is None:
        raise Forbidden("Authorization: the agent belongs to no team")
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
        )
    )
    return Runner(uid, team_uid, principal.uid, factory_uid)


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
    runner = Runner(row.uid, row.team_uid, row.agent_uid, row.factory_uid)
    if seen_lately is not None:  # until its presence is due again (a runner never changes)
        fresh_for = (seen + PRESENCE_PRECISION - now).total_seconds()
        seen_lately.put(runner_uid, runner, runner.agent_uid, generation, ttl_s=fresh_for)
    return runner


async def list_runners(
    conn: AsyncConnection, principal: Principal, lease_s: float
) -> list[dict[str, Any]]:
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
        {
            "uid": row.uid,
            "name": row.name,
            "host": row.host,
            "agent_uid": row.agent_uid,
            "factory_uid": row.factory_uid,
            "concurrency": row.concurrency,
            "version": row.version,
            "started_at": row.started_at,
            "last_seen_at": row.last_seen_at,
            "online": row.last_seen_at >= online_since,
            "runs_held": held.get(row.uid, 0),
        }
        for row in rows
    ]


# --- leases ----------------------------------------------------------------------------------


async def expire_leases(conn: AsyncConnection) -> None:
    """Runs whose lease ran out: back to QUEUED, or FAILED after MAX_ATTEMPTS claims; a run
    that ended meanwhile (cancelled) only loses its holder."""
    now = utcnow()
    query = (
        select(r.c.run_id, r.c.state, r.c.attempts, r.c.runner_uid)
        .where(r.c.lease_expires_at.is_not(None), r.c.lease_expires_at < now)
        .with_for_update(skip_locked=True)
    )
    expired = (await conn.execute(query)).all()
    if not expired:
        return
    ended = [row.run_id for row in expired if row.state in TERMINAL]
    failed = [row for row in expired if row.state not in TERMINAL and row.attempts >= MAX_ATTEMPTS]
    requeued = [row for row in expired if row.state not in TERMINAL and row.attempts < MAX_ATTEMPTS]
    free = {"runner_uid": None, "lease_expires_at": None, "lease_renewed_at": None}
    if ended:
        await conn.execute(update(r).where(r.c.run_id.in_(ended)).values(**free))
    if requeued:
        await conn.execute(
            update(r)
            .where(r.c.run_id.in_([row.run_id for row in requeued]))
            .values(state="QUEUED", updated_at=now, **free)
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
                status_message={
                    "message": message,
                    "error_code": "lease_expired",
                    "retryable": True,
                },
                **free,
            )
        )
        await run_timeline.record(
            conn, [row.run_id], "FAILED", now, runner_uid=row.runner_uid, reason=message
        )


async def claim(
    conn: AsyncConnection, runner: Runner, lease_s: float, limit: int = 1
) -> list[Row[Any]]:
    """Up to `limit` QUEUED cloud runs of the runner's team (and factory), oldest first, each
    CLAIMED with a lease of `lease_s` seconds; their CLAIMED_COLUMNS."""
    await expire_leases(conn)
    pick = select(r.c.run_id).where(
        r.c.state == "QUEUED", r.c.team_uid == runner.team_uid, r.c.run_type == "cloud"
    )
    if runner.factory_uid is not None:
        pick = pick.where(r.c.factory_uid == runner.factory_uid)
    pick = (
        pick.order_by(r.c.created_at, r.c.run_id)
        .limit(max(1, min(limit, MAX_CLAIM)))
        .with_for_update(skip_locked=True)
    )
    # picked first, then claimed: inside the UPDATE, PostgreSQL may run the LIMITed subquery
    # more than once and claim more than `limit` runs
    run_ids = list((await conn.execute(pick)).scalars())
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
    await run_timeline.record(
        conn, [row.run_id for row in rows], "CLAIMED", now, runner_uid=runner.uid
    )
    return rows


async def held_run(conn: AsyncConnection, runner: Runner, run_id: str) -> Row[Any]:
    """The run, locked, while `runner` holds it; 404 outside its team, 409 `lease_lost` when
    it finished, was taken back or is held by another runner."""
    held = (await held_runs(conn, runner, [run_id]))[run_id]
    if isinstance(held, ServiceError):
        raise held
    return held


async def held_runs(
    conn: AsyncConnection, runner: Runner, run_ids: list[str]
) -> dict[str, Row[Any] | ServiceError]:
    """`held_run` for several runs at once (one SELECT): each run, locked, or the error a call
    about it alone would answer."""
    query = select(r).where(r.c.run_id.in_(run_ids)).order_by(r.c.run_id).with_for_update()
    found = {row.run_id: row for row in (await conn.execute(query)).all()}
    now = utcnow()
    leases = [row.lease_expires_at for row in found.values() if row.lease_expires_at is not None]
    if any(expires < now for expires in leases):
        await expire_leases(conn)  # these among them: requeued (or failed) now
        found = {row.run_id: row for row in (await conn.execute(query)).all()}
    return {run_id: _held_by(found.get(run_id), runner, run_id) for run_id in run_ids}


def _held_by(row: Row[Any] | None, runner: Runner, run_id: str) -> Row[Any] | ServiceError:
    if row is None or row.team_uid != runner.team_uid:
        return NotFound(f"run_id: {run_id} not found")
    if row.runner_uid != runner.uid:
        return lease_lost(runner, run_id, row.state)
    return row


def lease_lost(runner: Runner, run_id: str, state: str) -> LeaseLost:
    return LeaseLost(
        f"run_id: runner {runner.uid} does not hold run {run_id} (it is {state}; "
        "finished, taken back after its lease expired, or claimed by another runner)"
    )


async def heartbeat(
    conn: AsyncConnection, runner: Runner, run_id: str, lease_s: float
) -> dict[str, Any]:
    """Renews the lease; says whether the run was cancelled or interrupted since the last one,
    and hands over the follow-ups sent into its live session since then."""
    row = await held_run(conn, runner, run_id)
    now = utcnow()
    since = row.lease_renewed_at or row.created_at
    interrupts = await conn.execute(
        select(func.count())
        .select_from(t.run_messages)
        .where(
            t.run_messages.c.run_id == run_id,
            t.run_messages.c.routing == "interrupt",
            t.run_messages.c.created_at > since,
        )
    )
    injected = await follow_ups(conn, [run_id], since=since, routings=("injected",))
    expires = now + timedelta(seconds=lease_s)
    await conn.execute(
        update(r).where(r.c.run_id == run_id).values(lease_expires_at=expires, lease_renewed_at=now)
    )
    return {
        "run_id": run_id,
        "state": row.state,
        "lease_expires_at": expires,
        "cancel_requested": row.state == "CANCELLED",
        "interrupt_requested": bool(interrupts.scalar_one()),
        "messages": injected.get(run_id, []),
    }


async def follow_ups(
    conn: AsyncConnection,
    run_ids: list[str],
    *,
    since: datetime | None = None,
    routings: tuple[str, ...] = FOLLOW_UPS,
) -> dict[str, list[dict[str, Any]]]:
    """Per run, the follow-ups users sent to it (after `since`), oldest first."""
    if not run_ids:
        return {}
    m = t.run_messages
    query = select(m).where(m.c.run_id.in_(run_ids), m.c.routing.in_(routings))
    if since is not None:
        query = query.where(m.c.created_at > since)
    found: dict[str, list[dict[str, Any]]] = {}
    for row in await conn.execute(query.order_by(m.c.created_at, m.c.id)):
        found.setdefault(row.run_id, []).append(
            {
                "id": row.id,
                "message": row.message,
                "attachments": row.attachments or [],
                "mode": row.mode,
                "routing": row.routing,
                "created_at": row.created_at,
            }
        )
    return found


def execution_mode(run: Row[Any], messages: list[dict[str, Any]]) -> str:
    """The mode an execution runs in: that of the newest follow-up queued for it which names
    one (those since the follow-up that resumed the ended run, or before the first start; one
    sent into a live session keeps the session's mode), else the run's own."""
    resumed = [i for i, m in enumerate(messages) if m["routing"] == "resumed"]
    current = messages[resumed[-1] :] if resumed else messages
    for message in reversed(current):
        if message["routing"] in ("queued", "resumed") and message["mode"]:
            return str(message["mode"])
    return run.mode or "normal"


async def progress(
    conn: AsyncConnection,
    runner: Runner,
    run_id: str,
    *,
    state: Literal["INPROGRESS", "BLOCKED"] | None,
    status_message: str | None,
    session_id: str | None,
    session_link: str | None,
) -> Row[Any]:
    """Moves a held run along (CLAIMED or BLOCKED -> INPROGRESS, INPROGRESS -> BLOCKED) and
    records what it is doing; a cancelled run keeps its state."""
    row = await held_run(conn, runner, run_id)
    now = utcnow()
    values: dict[str, Any] = {"updated_at": now}
    if state is not None and row.state != state and row.state not in TERMINAL:
        allowed = {"INPROGRESS": ("CLAIMED", "BLOCKED"), "BLOCKED": ("INPROGRESS",)}[state]
        if row.state not in allowed:
            raise InvalidRequest(f"state: a {row.state} run cannot become {state}")
        values["state"] = state
        if state == "INPROGRESS" and row.started_at is None:
            values["started_at"] = now
        await run_timeline.record(conn, [run_id], state, now, runner_uid=runner.uid)
    if status_message is not None and row.state not in TERMINAL:
        values["status_message"] = status_json(status_message)
    if session_id is not None:
        values["session_id"] = session_id
    if session_link is not None:
        values["session_link"] = session_link
    await conn.execute(update(r).where(r.c.run_id == run_id).values(**values))
    return await load_run(conn, run_id)


def status_json(message: str, error_code: str | None = None) -> dict[str, Any]:
    return {"message": message[:MAX_STATUS], "error_code": error_code, "retryable": False}


async def append_messages(
    conn: AsyncConnection, runner: Runner, run_id: str, messages: list[tuple[str, str]]
) -> int:
    """Conversation messages (role, text) the run produced, in order."""
    await held_run(conn, runner, run_id)
    now = utcnow()
    await conn.execute(
        insert(t.run_messages),
        [
            {
                "id": ids.new_id("msg"),
                "run_id": run_id,
                "message": text,
                "mode": role,
                "routing": "agent",
                # a microsecond apart: the messages of one report keep their order when read
                "created_at": now + timedelta(microseconds=i),
            }
            for i, (role, text) in enumerate(messages)
        ],
    )
    return len(messages)


async def add_artifact(
    conn: AsyncConnection, runner: Runner, run_id: str, artifact: dict[str, Any]
) -> Row[Any]:
    """A FILE (content stored) or PULL_REQUEST artifact of a held run; it joins the run's
    `artifacts` and, for a factory task's run, the task's outputs."""
    row = await held_run(conn, runner, run_id)
    return await store_artifact(conn, row, artifact)


async def store_artifact(
    conn: AsyncConnection, run: Row[Any], artifact: dict[str, Any]
) -> Row[Any]:
    now = utcnow()
    uid = ids.new_uuid()
    await conn.execute(
        insert(t.run_artifacts).values(
            artifact_uid=uid, run_id=run.run_id, created_at=now, **artifact
        )
    )
    kind = artifact["artifact_type"]
    if kind == "PULL_REQUEST":
        await pull_requests.record(
            conn,
            run,
            uid,
            now,
            url=artifact.get("url"),
            title=artifact.get("title"),
            branch=artifact.get("branch"),
            state=artifact.get("pr_state"),
        )
    if kind != "TRANSCRIPT":
        listed = [*(run.artifacts or []), _artifact_item(uid, now, artifact)]
        await conn.execute(update(r).where(r.c.run_id == run.run_id).values(artifacts=listed))
        task = await tasks.live_task_of(conn, await _root_conversation(conn, run))
        if task is not None:
            url = artifact.get("url") if kind == "PULL_REQUEST" else f"artifact:{uid}"
            title = artifact.get("title") or artifact.get("filename")
            await tasks.add_output(conn, task.uid, kind.lower(), title, url)
    stored = (
        await conn.execute(select(t.run_artifacts).where(t.run_artifacts.c.artifact_uid == uid))
    ).first()
    assert stored is not None
    return stored


async def _root_conversation(conn: AsyncConnection, run: Row[Any]) -> str:
    """A task is bound to its root run's conversation (tasks.task_by_run)."""
    root = run if run.parent_run_id is None else await find_run(conn, run.root_run_id)
    return str((root or run).conversation_id)


def _artifact_item(uid: str, at: datetime, artifact: dict[str, Any]) -> dict[str, Any]:
    """The run's `artifacts` entry, in the official client's ArtifactItem shape."""
    if artifact["artifact_type"] == "PULL_REQUEST":
        data = {"url": artifact["url"], "branch": artifact.get("branch") or ""}
        if artifact.get("title"):
            data["title"] = artifact["title"]
        if artifact.get("pr_state"):
            data["state"] = artifact["pr_state"]
    else:
        filename = artifact["filename"]
        data = {
            "artifact_uid": uid,
            "filename": filename,
            "filepath": artifact.get("filepath") or filename,
            "mime_type": artifact["mime_type"],
            "size_bytes": artifact["size"],
        }
        for key in ("description", "title"):
            if artifact.get(key):
                data[key] = artifact[key]
    return {"artifact_type": artifact["artifact_type"], "created_at": at.isoformat(), "data": data}


async def report_usage(
    conn: AsyncConnection,
    runner: Runner,
    run_id: str,
    *,
    model_id: str | None,
    input_tokens: int,
    output_tokens: int,
    costs: dict[str, float],
) -> None:
    """Adds usage to the run's: tokens, and dollars per cost component (one row each; tokens
    ride on the first, so sums over rows stay right)."""
    run = await held_run(conn, runner, run_id)
    now = utcnow()
    components = list(costs.items()) or [("tokens", 0.0)]
    about_run = usage_dimensions(run)
    await conn.execute(
        insert(t.run_usage),
        [
            {
                "id": ids.new_id("use"),
                "run_id": run_id,
                "model_id": model_id,
                "input_tokens": input_tokens if i == 0 else 0,
                "output_tokens": output_tokens if i == 0 else 0,
                "component": component,
                "cost_usd": dollars,
                "reported_at": now,
                **about_run,
            }
            for i, (component, dollars) in enumerate(components)
        ],
    )
    await pr_costs.refresh_tree(conn, run.root_run_id)  # the tree's PRs cost more now


def usage_dimensions(run: Any) -> dict[str, Any]:
    """What factory metrics group and window spend by, copied from the run (none of it changes
    after creation): spend queries read run_usage alone (docs/metrics.md)."""
    return {
        "factory_uid": run.factory_uid,
        "run_created_at": run.created_at,
        "root_run_id": run.root_run_id,
        "source": run.source,
        "user_uid": run.creator_uid if run.creator_kind == "user" else None,
        "agent_uid": run.agent_uid,
    }


async def usage_of(conn: AsyncConnection, run_id: str) -> dict[str, Any]:
    """The run's reported usage summed: tokens, dollars in all and per component and model."""
    u = t.run_usage
    rows = (
        await conn.execute(
            select(
                u.c.model_id,
                u.c.component,
                func.sum(u.c.input_tokens),
                func.sum(u.c.output_tokens),
                func.sum(u.c.cost_usd),
            )
            .where(u.c.run_id == run_id)
            .group_by(u.c.model_id, u.c.component)
            .order_by(u.c.model_id, u.c.component)
        )
    ).all()
    return {
        "run_id": run_id,
        "input_tokens": sum(int(row[2]) for row in rows),
        "output_tokens": sum(int(row[3]) for row in rows),
        "cost_usd": round(sum(float(row[4]) for row in rows), 6),
        "components": [
            {
                "model_id": row[0],
                "component": row[1],
                "input_tokens": int(row[2]),
                "output_tokens": int(row[3]),
                "cost_usd": round(float(row[4]), 6),
            }
            for row in rows
        ],
    }


async def release(conn: AsyncConnection, runner: Runner, run_id: str, reason: str) -> Row[Any]:
    """Gives a held run back (the runner is stopping): QUEUED again for another runner; the
    claim still counts as an attempt. A cancelled run only loses its holder."""
    row = await held_run(conn, runner, run_id)
    now = utcnow()
    values: dict[str, Any] = {
        "runner_uid": None,
        "lease_expires_at": None,
        "lease_renewed_at": None,
        "updated_at": now,
    }
    if row.state not in TERMINAL:
        values["state"] = "QUEUED"
        await run_timeline.record(
            conn, [run_id], "QUEUED", now, runner_uid=runner.uid, reason=reason
        )
    await conn.execute(update(r).where(r.c.run_id == run_id).values(**values))
    return await load_run(conn, run_id)


# --- what runners and users read ---------------------------------------------------------------


def _payload_attachment(run: Row[Any]) -> Any:
    # by conversation (indexed), then run: a conversation holds few attachments
    a = t.attachments
    return (
        a.c.conversation_id == run.conversation_id,
        a.c.run_id == run.run_id,
        a.c.file_name == PAYLOAD_NAME,
        a.c.delivery_id.is_not(None),
    )


async def event_payload(conn: AsyncConnection, run: Row[Any]) -> bytes | None:
    """The payload of the delivery that started a webhook run (its event-payload.json)."""
    a, d = t.attachments, t.deliveries
    query = (
        select(d.c.payload)
        .select_from(a.join(d, d.c.delivery_id == a.c.delivery_id))
        .where(*_payload_attachment(run))
    )
    payload = (await conn.execute(query)).scalar()
    return None if payload is None else bytes(payload)


async def with_event_payload(conn: AsyncConnection, runs: list[Row[Any]]) -> set[str]:
    """Which of `runs` (their run ids) have an event payload, in one query."""
    runs = [run for run in runs if run.delivery_id is not None]  # only those have one
    if not runs:
        return set()
    a = t.attachments
    query = select(a.c.run_id).where(
        a.c.conversation_id.in_({run.conversation_id for run in runs}),
        a.c.run_id.in_([run.run_id for run in runs]),
        a.c.file_name == PAYLOAD_NAME,
        a.c.delivery_id.is_not(None),
    )
    return set((await conn.execute(query)).scalars())


async def artifact(conn: AsyncConnection, artifact_uid: str) -> tuple[Row[Any], Row[Any]]:
    """(artifact, its run); 404 when unknown."""
    a = t.run_artifacts
    row = (await conn.execute(select(a).where(a.c.artifact_uid == artifact_uid))).first()
    run = None if row is None else await find_run(conn, row.run_id)
    if row is None or run is None:
        raise NotFound(f"artifact_uid: {artifact_uid} not found")
    return row, run


async def transcript_of(conn: AsyncConnection, run_id: str) -> Row[Any] | None:
    a = t.run_artifacts
    query = (
        select(a)
        .where(a.c.run_id == run_id, a.c.artifact_type == "TRANSCRIPT")
        .order_by(a.c.created_at.desc())
        .limit(1)
    )
    return (await conn.execute(query)).first()
