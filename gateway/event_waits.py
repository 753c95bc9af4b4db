"""Waiting for an `asyncio.Event` at most so long, without losing a cancellation.

`asyncio.wait_for` on Python 3.11 answers the inner result when a cancellation arrives just as
the inner wait ends: a background loop whose own shutdown sets its event (a send ending as it is
cancelled wakes the dispatcher) swallows the cancellation and loops on for ever. A plain `await`
under `asyncio.timeout` keeps it, so every loop of the gateway waits through `wait_event`.
"""

from __future__ import annotations

import asyncio


async def wait_event(event: asyncio.Event, seconds: float) -> bool:
    """True when `event` was set, False when `seconds` passed first."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True
