"""The platform's side of the evaluator's port
(`gateway.webhook_gateway.evaluator.run_platform.RunPlatform`): the webhook gateway imports nothing
of the platform (the import contracts of pyproject.toml), so the composition
(`gateway.composition.wiring`) hands the evaluator a `DeliveryRunPlatform`. The evaluator plans the
runs of a batch of deliveries as rows in the column order of `DELIVERY_RUNS`, encoded for the
driver, and the platform writes them (`insert_delivery_runs`: the platform's one writer of runs,
runs/creation/new_runs.py); around them the platform wants to hear of two things, and it says what a
run's payload attachment is listed as."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from gateway.foundation.store.bulk import BulkInsert, Prepared, json_value
from gateway.platform.analytics.pull_requests import FORGE_MARK, forge_detail, record_forge_detail
from gateway.platform.inbox.notifications import on_dispatch_failed
from gateway.platform.runs.creation.new_runs import DELIVERY_RUNS, insert_delivery_runs
from gateway.platform.runs.creation.resolution import agents_configs
from gateway.platform.runs.creation.worker_pinning import pinned_worker
from gateway.platform.runs.record.store import json_column
from gateway.platform.work_items import ends as work_item_ends
from gateway.platform.work_items import store as work_items
from gateway.webhook_gateway.evaluator.run_platform import AgentRunConfig

if TYPE_CHECKING:
    from gateway.webhook_gateway.evaluator.run_platform import (
        KnownWorkItem,
        NewWorkItem,
        WorkItemEnd,
        WorkItemFollowUp,
        WorkItemKey,
    )

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection


def payload_artifact(attachment_id: str, created: str, name: str, size: int) -> Any:
    """The `artifacts` entry of a webhook run's payload attachment, as its JSON column holds it:
    a FILE like those the run produces (`file_artifact`), so GET /agent/artifacts/{attachment_id}
    finds it. Built as the plain object `file_artifact` encodes to (tests hold them together):
    the Struct and its conversion were a twentieth of the evaluator's planning time."""
    return {
        "artifact_type": "FILE",
        "created_at": created,
        "data": {
            "artifact_uid": attachment_id,
            "filename": name,
            "filepath": name,
            "mime_type": "application/json",
            "size_bytes": size,
        },
    }


class DeliveryRunPlatform:
    """The evaluator's `RunPlatform`: each member hands over to the platform's own code."""

    __slots__ = ()

    @property
    def delivery_runs(self) -> BulkInsert:
        return DELIVERY_RUNS

    @property
    def forge_mark(self) -> bytes:
        return FORGE_MARK

    def payload_artifact(self, attachment_id: str, created: str, name: str, size: int) -> Any:
        return payload_artifact(attachment_id, created, name, size)

    def forge_detail(self, payload: Any) -> Any:
        return forge_detail(payload)

    async def agent_configs(
        self, conn: AsyncConnection, agent_uids: Collection[str]
    ) -> dict[str, AgentRunConfig]:
        configs = await agents_configs(conn, agent_uids)
        return {
            uid: AgentRunConfig(json_value(json_column(config)), pinned_worker(config))
            for uid, config in configs.items()
        }

    async def insert_delivery_runs(self, conn: AsyncConnection, rows: Prepared) -> None:
        await insert_delivery_runs(conn, rows)

    async def find_work_items(
        self, conn: AsyncConnection, refs: Collection[str]
    ) -> dict[WorkItemKey, KnownWorkItem]:
        return await work_items.find_work_items(conn, refs)

    async def start_work_items(self, conn: AsyncConnection, items: Sequence[NewWorkItem]) -> None:
        await work_items.start_work_items(conn, items)

    async def continue_work_items(
        self, conn: AsyncConnection, follow_ups: Sequence[WorkItemFollowUp]
    ) -> None:
        await work_items.continue_work_items(conn, follow_ups)

    async def end_work_items(self, conn: AsyncConnection, ends: Sequence[WorkItemEnd]) -> None:
        await work_item_ends.end_work_items(conn, ends)

    async def on_dispatch_failed(
        self, conn: AsyncConnection, factory_uid: str, detail: str
    ) -> None:
        await on_dispatch_failed(conn, factory_uid, detail)

    async def record_forge_detail(
        self, conn: AsyncConnection, payload: Any, source_uid: str
    ) -> None:
        await record_forge_detail(conn, payload, source_uid)


PLATFORM = DeliveryRunPlatform()

__all__ = [
    "DELIVERY_RUNS",
    "FORGE_MARK",
    "PLATFORM",
    "DeliveryRunPlatform",
    "forge_detail",
    "insert_delivery_runs",
    "on_dispatch_failed",
    "payload_artifact",
    "record_forge_detail",
]
