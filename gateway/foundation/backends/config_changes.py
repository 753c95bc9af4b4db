"""How a webhook's configuration change reaches every gateway process's ingress cache."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol


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
