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
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy.engine import Dialect

from gateway.foundation.store import tables as t
from gateway.foundation.store.bulk import BulkInsert, Encode, Values
from gateway.kernel import ids
from gateway.webhook_gateway.evaluator.run_platform import RunPlatform

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


class RunRef(NamedTuple):
    automation_uid: str
    run_id: str


class StartedRows(NamedTuple):
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
    artifact: Callable[[str, str, str, int], Any]

    @classmethod
    def of(cls, dialect: Dialect, platform: RunPlatform) -> Encoders:
        runs = platform.delivery_runs  # the platform's layout of a run's row
        return cls(
            runs.encoder(dialect, "created_at"),
            runs.encoder(dialect, "metadata"),
            platform.payload_artifact,
        )

    def moment(self, at: datetime) -> Moment:
        """`at` as the driver takes it and as the ISO text an artifact shows."""
        return Moment(self.time(at), at.isoformat())

    def run_times(self, now: datetime) -> RunTimes:
        return RunTimes(now, self)


class Moment(NamedTuple):
    stored: Any  # as the driver takes it: SQLite's naive UTC text, or the datetime
    iso: str  # datetime.isoformat(): "...+00:00"


class RunTimes:
    """A batch's run times: `now`, then one microsecond later per run (a delivery's runs list in
    creation order). Within `now`'s second each is formatted from the second's text: a
    datetime added, formatted and cut per run was a tenth of the planning's time."""

    __slots__ = ("_encode", "_iso_head", "_now", "_stored_head")

    def __init__(self, now: datetime, encode: Encoders) -> None:
        self._now, self._encode = now, encode
        second = now.replace(microsecond=0)
        stored = encode.time(second)
        # SQLite's text "YYYY-MM-DD HH:MM:SS.ffffff": everything up to the fraction
        self._stored_head = stored[:20] if isinstance(stored, str) else None
        self._iso_head = second.isoformat()[:19] + "."

    def at(self, offset: int) -> Moment:
        """The moment `offset` microseconds after `now`."""
        micro = self._now.microsecond + offset
        if self._stored_head is None or not 0 < micro < 1_000_000:
            return self._encode.moment(self._now + timedelta(microseconds=offset))
        fraction = f"{micro:06d}"
        return Moment(self._stored_head + fraction, f"{self._iso_head}{fraction}+00:00")


class RunSpec(NamedTuple):
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


def started_rows(
    spec: RunSpec, created: Moment, encode: Encoders, supply: ids.IdSupply | None = None
) -> StartedRows:
    """The rows of one QUEUED cloud run of source WEBHOOK, its payload attachment and its
    TRIAGE task, `created` then; their ids from the batch's `supply`."""
    supply = supply or ids.IdSupply()
    run_id, conversation_id = supply.uuid(), supply.uuid()
    attachment_id = supply.id("att")
    artifact = encode.artifact(attachment_id, created.iso, PAYLOAD_NAME, spec.payload_size)
    at = created.stored
    delivery_id = spec.delivery_id
    # plain tuple displays, a few values a line: a display of starred tuples, `(*(a, b), *(c,))`,
    # builds each part and a list before the tuple (3x the time, per row)
    run = (
        run_id, spec.team_uid, spec.factory_uid, conversation_id, run_id, spec.title,
        spec.prompt, "QUEUED", "WEBHOOK", "cloud", encode.json(spec.metadata),
        encode.json([artifact]), at, at, False, delivery_id, spec.automation_uid,
        spec.agent_uid, spec.agent_config, spec.worker_host, spec.work_item_id,
    )  # fmt: skip
    attachment = (
        attachment_id, conversation_id, run_id, PAYLOAD_NAME, "application/json",
        spec.payload_size, delivery_id, at,
    )  # fmt: skip
    task = (
        supply.id("task"), spec.factory_uid, spec.title, "TRIAGE", conversation_id,
        None, None, None, at, at,  # no creator, no ticket
    )  # fmt: skip
    ref = RunRef(spec.automation_uid, run_id)
    return StartedRows(ref, run, attachment, task, spec.work_item_id)
