"""Waiting for an `asyncio.Event` at most so long, without losing a cancellation.

`asyncio.wait_for` on Python 3.11 answers the inner result when a cancellation arrives just as
the inner wait ends: a background loop whose own shutdown sets its event (a send ending as it is
cancelled wakes the dispatcher) swallows the cancellation and loops on for ever. A plain `await`
under `asyncio.timeout` keeps it, so every loop of the gateway waits through `wait_event`.
It also honours a cancellation that the loop's work swallowed (see `wait_event`).
"""

from __future__ import annotations

import asyncio


def _stop_if_asked() -> None:
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def pause(seconds: float) -> None:
    """`asyncio.sleep(seconds)` for background loops: like `wait_event`, it stops a task whose
    cancellation its work swallowed."""
    _stop_if_asked()
    await asyncio.sleep(seconds)


async def wait_event(event: asyncio.Event, seconds: float) -> bool:
    """True when `event` was set, False when `seconds` passed first. A task asked to stop whose
    cancellation was turned into another error on the way here (a database driver cancelled
    mid-call raises its own; the loop logs it as a passing failure and waits again) stops now:
    its request is still counted (`Task.cancelling`), and nothing would ask again."""
    _stop_if_asked()
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True
