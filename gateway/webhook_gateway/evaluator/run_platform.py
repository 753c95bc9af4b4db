"""The platform as the evaluator sees it: the port through which the runs a batch of deliveries
starts are written, and the two things the platform wants to hear of beside them.

The evaluator is part of the webhook gateway, which imports nothing of the platform (the
product boundary of pyproject.toml's import contracts): it depends on this protocol, and the
composition (`gateway.composition.wiring`) hands it the platform's implementation
(`gateway.platform.run_start.DeliveryRunPlatform`, over runs/creation/new_runs.py, the
platform's one writer of runs). Everything here is called per batch, or once per delivery that
carries a code-forge pull request, never more.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store.bulk import BulkInsert, Prepared
from gateway.webhook_gateway.providers.work_item_ends import Ending


class WorkItemKey(NamedTuple):
    """What identifies a work item: its factory and its source (docs/providers.md#work-items)."""

    factory_uid: str
    provider: str
    ref: str


class KnownWorkItem(NamedTuple):
    """A work item as the evaluator needs it: its id, team, and the run follow-ups go to."""

    id: str
    team_uid: str
    run_id: str | None


class NewWorkItem(NamedTuple):
    """A work item the first matching event of its source makes, with that event's runs."""

    id: str
    key: WorkItemKey
    team_uid: str
    kind: str
    url: str | None
    target: Any  # its reply target as JSON (gateway.webhook_gateway.replies.work_items.target_json)
    run_id: str  # the run later activity continues
    delivery_id: str
    created_at: datetime


class WorkItemFollowUp(NamedTuple):
    """A later delivery about a work item: a follow-up of its run, not a new run."""

    work_item_id: str
    run_id: str
    delivery_id: str
    message: str
    payload_size: int  # the delivery's body, attached to the follow-up as a file
    message_ref: str | None = None  # one follow-up per provider message (Source.message_ref)


@dataclass(frozen=True, slots=True)
class WorkItemEnd:
    """A delivery that ends work items of its team (a merged pull request, a closed issue)."""

    team_uid: str
    ending: Ending
    at: datetime


class AgentRunConfig(NamedTuple):
    """runs.agent_config as the driver takes it (`store.bulk.json_value`), and runs.worker_host."""

    agent_config: str | None
    worker_host: str | None


class RunPlatform(Protocol):
    @property
    def delivery_runs(self) -> BulkInsert:
        """The layout of a run's row (its columns, in order): the evaluator builds its rows in
        it, encoded for the driver, and `insert_delivery_runs` writes them."""
        ...

    @property
    def forge_mark(self) -> bytes:
        """Bytes every payload `forge_detail` can read contains (a cheap test first)."""
        ...

    def payload_artifact(self, attachment_id: str, created: str, name: str, size: int) -> Any:
        """The `artifacts` entry of a run's payload attachment, as its JSON column holds it
        (`created`: the ISO text of its time)."""
        ...

    def forge_detail(self, payload: Any) -> Any:
        """The pull request a code-forge payload describes (None: not such a payload)."""
        ...

    async def agent_configs(
        self, conn: AsyncConnection, agent_uids: Collection[str]
    ) -> dict[str, AgentRunConfig]:
        """What the runs of these agents carry when their automation stores no configuration
        (one made by the API): per agent that exists, its configuration encoded for the driver
        and the worker it pins runs to. Called once per batch that needs it."""
        ...

    async def insert_delivery_runs(self, conn: AsyncConnection, rows: Prepared) -> None:
        """Inserts the QUEUED runs of a batch, `rows` in the layout of `delivery_runs`."""
        ...

    async def find_work_items(
        self, conn: AsyncConnection, refs: Collection[str]
    ) -> dict[WorkItemKey, KnownWorkItem]:
        """The work items of these refs, of any provider and factory: one query per batch
        that has any."""
        ...

    async def start_work_items(self, conn: AsyncConnection, items: Sequence[NewWorkItem]) -> None:
        """Inserts the work items the batch's runs (written before) belong to."""
        ...

    async def continue_work_items(
        self, conn: AsyncConnection, follow_ups: Sequence[WorkItemFollowUp]
    ) -> None:
        """Sends each follow-up to its work item's run (queued, injected or resuming it)."""
        ...

    async def end_work_items(self, conn: AsyncConnection, ends: Sequence[WorkItemEnd]) -> None:
        """Moves the work items these deliveries end to their last stage."""
        ...

    async def on_dispatch_failed(
        self, conn: AsyncConnection, factory_uid: str, detail: str
    ) -> None:
        """Deliveries matched automations of a factory that has no agent to run them as."""
        ...

    async def record_forge_detail(
        self, conn: AsyncConnection, payload: Any, source_uid: str
    ) -> None:
        """A code-forge pull-request payload arrived through `source_uid`."""
        ...
