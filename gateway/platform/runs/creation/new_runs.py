"""New runs: the only place a run's row is written (docs/architecture.md, "Layers").

Every way of starting a run makes a `NewRun` and inserts it here: the API (runs/creation),
factory dispatch, scheduled agents, benchmark trials, and the automations that start runs inside
the platform. The evaluator starts runs for deliveries in batches: its rows, already encoded for
the driver in the column order of `DELIVERY_RUNS`, go in through `insert_delivery_runs`
(gateway/platform/run_start.py hands both to it). A new run is QUEUED; every later change of its
state goes through runs/record/states.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.foundation.store.bulk import BulkInsert, Prepared
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.types import JsonObject
from gateway.platform.runs.creation.resolution import resolve_config
from gateway.platform.runs.creation.worker_pinning import pinned_host, pinned_worker
from gateway.platform.runs.record import run_events
from gateway.platform.runs.record.models import AgentConfig, RunArtifact, RunRecord
from gateway.platform.runs.record.store import json_column, load_run

QUEUED = "QUEUED"  # the state every run starts in
# The columns a run a delivery starts sets (evaluator/run_rows.py builds its rows in this order);
# the others take their defaults. Its `agent_config` is its automation's, as stored, and its
# `worker_host` the worker that configuration pins it to (`worker_pinning.pinned_host`).
DELIVERY_RUNS = BulkInsert(
    t.runs,
    (
        *("run_id", "team_uid", "factory_uid", "conversation_id", "root_run_id", "title"),
        *("prompt", "state", "source", "run_type", "metadata", "artifacts", "created_at"),
        *("updated_at", "task_pending", "delivery_id", "automation_uid", "agent_uid"),
        *("agent_config", "worker_host", "work_item_id"),
    ),
)


# not frozen: a frozen dataclass of this many fields costs ~3x as much to build (one
# object.__setattr__ per field)
@dataclass(slots=True)
class NewRun:
    prompt: str
    team_uid: str | None
    title: str | None = None
    factory_uid: str | None = None
    creator: Principal | None = None
    source: str = "API"
    run_type: str = "cloud"
    agent_config: AgentConfig | None = None
    metadata: dict[str, str] | None = None
    artifacts: list[RunArtifact] | None = None
    ticket_ref: str | None = None
    ticket_url: str | None = None
    parent: RunRecord | None = None  # the parent run: the child joins its tree
    conversation_id: str | None = None  # continue this conversation with a new root run
    task_pending: bool = False
    agent_uid: str | None = None  # the agent that executes it
    mode: str | None = None  # of its first execution; None is normal
    # an automation's configuration as its factory's apply stored it: the run carries it as
    # written, in place of `agent_config`
    stored_config: JsonObject | None = None


async def insert_run(conn: AsyncConnection, new: NewRun, run_id: str | None = None) -> RunRecord:
    """Inserts a QUEUED run. A child shares its root's conversation and root; a root run starts
    a new conversation unless it continues one. Its configuration is resolved here, once
    (resolution.py): its agent's, the request's over it, or its automation's as stored."""
    run_id = run_id or ids.new_uuid()
    if new.stored_config is None:
        new.agent_config = await resolve_config(conn, new.agent_uid, new.agent_config)
    await conn.execute(insert(t.runs).values(**run_values(new, run_id, utcnow())))
    run = await load_run(conn, run_id)
    await run_events.on_created(conn, run)
    return run


async def insert_delivery_runs(conn: AsyncConnection, rows: Prepared) -> None:
    """Inserts the QUEUED runs of a batch of deliveries in one executemany: `rows` encoded for
    the connection's driver, each in the column order of `DELIVERY_RUNS`."""
    await DELIVERY_RUNS.insert(conn, rows)
    # their run.created events, in the same transaction and one more executemany
    await run_events.on_created_rows(conn, DELIVERY_RUNS.columns, rows.values)


def run_values(new: NewRun, run_id: str, now: datetime) -> dict[str, object]:
    """The column values of a new QUEUED run, as the store takes them."""
    if new.parent is not None:
        conversation, root = new.parent.conversation_id, new.parent.root_run_id
    else:
        conversation, root = new.conversation_id or ids.new_uuid(), run_id
    config = new.stored_config if new.stored_config is not None else json_column(new.agent_config)
    return {
        "run_id": run_id,
        "team_uid": new.team_uid,
        "factory_uid": new.factory_uid,
        "conversation_id": conversation,
        "parent_run_id": None if new.parent is None else new.parent.run_id,
        "root_run_id": root,
        "title": new.title,
        "prompt": new.prompt,
        "state": QUEUED,
        "source": new.source,
        "run_type": new.run_type,
        "creator_kind": None if new.creator is None else new.creator.kind,
        "creator_uid": None if new.creator is None else new.creator.uid,
        "agent_config": config,
        "metadata": new.metadata,
        "artifacts": json_column(new.artifacts),
        "ticket_ref": new.ticket_ref,
        "ticket_url": new.ticket_url,
        "created_at": now,
        "updated_at": now,
        "task_pending": new.task_pending,
        "agent_uid": new.agent_uid,
        "mode": new.mode,
        "worker_host": pinned_worker(new.agent_config)
        if new.stored_config is None
        else pinned_host(new.stored_config.get("worker_host")),
    }
