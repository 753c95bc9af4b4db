"""The rows of a run a delivery starts (webhook or provider automation): the run, its
event-payload.json attachment (pointing at the delivery's stored payload, not a copy) and its
task, built as tuples already encoded for the batch's driver, in the column orders of the
platform's layout of a run (`RunPlatform.delivery_runs`), ATTACHMENTS and TASKS. `run_values`
and `task_values` of the platform make the same rows of the same run (tests hold them
together); a dict of every column per row, encoded through its column types, cost this path
twice as much."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Dialect

from gateway import ids
from gateway.evaluator.run_platform import RunPlatform
from gateway.store import tables as t
from gateway.store.bulk import BulkInsert, Encode, Values

PAYLOAD_NAME = "event-payload.json"

ATTACHMENTS = BulkInsert(
    t.attachments,
    (
        *("attachment_id", "conversation_id", "run_id", "file_name", "content_type", "size"),
        *("delivery_id", "created_at"),
    ),
)
TASKS = BulkInsert(
    t.tasks,
    (
        *("uid", "factory_uid", "title", "stage", "conversation_id", "created_by_uid"),
        *("ticket_source", "ticket_id", "created_at", "updated_at"),
    ),
)


@dataclass(frozen=True, slots=True)
class RunRef:
    automation_uid: str
    run_id: str


@dataclass(frozen=True, slots=True)
class StartedRows:
    """The rows of one run a delivery starts, encoded for the driver."""

    ref: RunRef
    run: Values
    attachment: Values
    task: Values
    work_item_id: str | None = None


@dataclass(frozen=True, slots=True)
class Encoders:
    """How a batch's times and JSON values go to its database driver, and what the platform
    lists a run's payload attachment as (`RunPlatform.payload_artifact`)."""

    time: Encode
    json: Encode
    artifact: Callable[[str, datetime, str, int], Any]

    @classmethod
    def of(cls, dialect: Dialect, platform: RunPlatform) -> Encoders:
        runs = platform.delivery_runs  # the platform's layout of a run's row
        return cls(
            runs.encoder(dialect, "created_at"),
            runs.encoder(dialect, "metadata"),
            platform.payload_artifact,
        )


@dataclass(frozen=True, slots=True)
class RunSpec:
    """What differs between the runs deliveries start."""

    delivery_id: str
    payload_size: int
    team_uid: str
    factory_uid: str
    title: str  # the automation's name
    prompt: str  # its prompt and the envelope
    metadata: dict[str, str]
    automation_uid: str
    agent_uid: str | None
    # runs.agent_config as the driver takes it, encoded once per automation
    # (`store.bulk.json_value`, `index.Automation.agent_config`), or None
    agent_config: str | None = None
    worker_host: str | None = None  # the worker that configuration pins the run to
    work_item_id: str | None = None  # the work item the run belongs to


def started_rows(spec: RunSpec, created: datetime, encode: Encoders) -> StartedRows:
    """The rows of one QUEUED cloud run of source WEBHOOK, its payload attachment and its
    TRIAGE task, `created` then."""
    run_id, conversation_id = ids.new_uuid(), ids.new_uuid()
    attachment_id = ids.new_id("att")
    artifact = encode.artifact(attachment_id, created, PAYLOAD_NAME, spec.payload_size)
    at = encode.time(created)
    delivery_id = spec.delivery_id
    run = (
        *(run_id, spec.team_uid, spec.factory_uid, conversation_id, run_id, spec.title),
        *(spec.prompt, "QUEUED", "WEBHOOK", "cloud", encode.json(spec.metadata)),
        *(encode.json([artifact]), at, at, False, delivery_id, spec.automation_uid),
        *(spec.agent_uid, spec.agent_config, spec.worker_host, spec.work_item_id),
    )
    attachment = (
        *(attachment_id, conversation_id, run_id, PAYLOAD_NAME, "application/json"),
        *(spec.payload_size, delivery_id, at),
    )
    task = (
        *(ids.new_id("task"), spec.factory_uid, spec.title, "TRIAGE", conversation_id),
        *(None, None, None, at, at),  # no creator, no ticket
    )
    ref = RunRef(spec.automation_uid, run_id)
    return StartedRows(ref, run, attachment, task, spec.work_item_id)
