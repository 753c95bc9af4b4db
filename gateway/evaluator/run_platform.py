"""The platform as the evaluator sees it: the port through which the runs a batch of deliveries
starts are written, and the two things the platform wants to hear of beside them.

The evaluator is part of the webhook gateway, which imports nothing of the platform (the
product boundary of pyproject.toml's import contracts): it depends on this protocol, and the
composition (`gateway.wiring`) hands it the platform's implementation
(`gateway.platform.run_start.DeliveryRunPlatform`, over runs/creation/new_runs.py, the
platform's one writer of runs). Everything here is called per batch, or once per delivery that
carries a code-forge pull request, never more.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.bulk import BulkInsert, Prepared


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

    def payload_artifact(self, attachment_id: str, created: datetime, name: str, size: int) -> Any:
        """The `artifacts` entry of a run's payload attachment, as its JSON column holds it."""
        ...

    def forge_detail(self, payload: Any) -> Any:
        """The pull request a code-forge payload describes (None: not such a payload)."""
        ...

    async def insert_delivery_runs(self, conn: AsyncConnection, rows: Prepared) -> None:
        """Inserts the QUEUED runs of a batch, `rows` in the layout of `delivery_runs`."""
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
