"""Start-up order of one process: store, backends, worker. Each part registers its closer."""

from __future__ import annotations

from gateway.services import Services
from gateway.store import migrate


async def start(services: Services, *, with_worker: bool | None = None) -> None:
    await migrate(services.database)
