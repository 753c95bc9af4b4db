"""The resources one process owns, created in the lifespan and shared by API, ingress and worker."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.api.pagination import Cursors
from gateway.security import SecretBox
from gateway.settings import Settings
from gateway.store import Database


class ConfigPublisher(Protocol):
    """Tells every gateway process that a webhook's configuration changed."""

    async def webhook_changed(self, webhook_uid: str, version: int) -> None: ...


class LocalConfigPublisher:
    """Single process: notify in-process listeners (the ingress config cache) directly."""

    def __init__(self) -> None:
        self.listeners: list[Callable[[str, int], Awaitable[None]]] = []

    async def webhook_changed(self, webhook_uid: str, version: int) -> None:
        for listener in self.listeners:
            await listener(webhook_uid, version)


@dataclass
class Services:
    settings: Settings
    database: Database
    secret_box: SecretBox
    cursors: Cursors
    config_publisher: ConfigPublisher = field(default_factory=LocalConfigPublisher)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    # gateway.ingress.pipeline.Ingress once wiring.start has built it (None: API-only or starting)
    ingress: Any = None
    background: set[asyncio.Task[Any]] = field(default_factory=set)

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run `coro` in the background, keep a reference, log (never lose) its failure."""
        task = asyncio.create_task(coro, name=name)
        self.background.add(task)
        task.add_done_callback(_forget(self.background))
        return task

    async def close(self) -> None:
        for task in list(self.background):
            task.cancel()
        await asyncio.gather(*self.background, return_exceptions=True)
        for close in reversed(self.closers):
            await close()
        self.closers.clear()
        await self.database.close()


def build_services(settings: Settings) -> Services:
    from gateway.store import create_database

    box = SecretBox(settings.secret_key)
    return Services(
        settings=settings,
        database=create_database(settings.database_url),
        secret_box=box,
        cursors=Cursors(box),
    )


def _forget(tasks: set[asyncio.Task[Any]]) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logging.getLogger("gateway").error(
                "background task %s failed", task.get_name(), exc_info=task.exception()
            )

    return done
