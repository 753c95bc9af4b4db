"""An in-process wake-up: code that waits for something another task of this process may cause
(runners long-polling for queued runs) sleeps until told, instead of only polling.

The waiters still poll: whatever another process does (a separate worker starting runs, another
API process) sends no wake-up here, and a wake-up is a hint to look again, never a promise.
"""

from __future__ import annotations

import asyncio

from gateway.kernel.event_waits import wait_event


class Wakeup:
    def __init__(self) -> None:
        self._event = asyncio.Event()

    def ticket(self) -> asyncio.Event:
        """Take before looking: `wait` on it then returns at once if `notify` came meanwhile."""
        return self._event

    def notify(self) -> None:
        """Wakes everyone waiting on a ticket taken before now."""
        self._event.set()
        self._event = asyncio.Event()

    @staticmethod
    async def wait(ticket: asyncio.Event, seconds: float) -> bool:
        """True when woken, False when `seconds` passed first."""
        return await wait_event(ticket, seconds)
