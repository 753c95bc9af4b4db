"""wait_event keeps a cancellation that arrives as the event is set (asyncio.wait_for on 3.11
answers the event instead, and a background loop that set its own event at shutdown never
ends)."""

from __future__ import annotations

import asyncio

from gateway.kernel.event_waits import wait_event


async def test_set_and_timeout() -> None:
    event = asyncio.Event()
    assert await wait_event(event, 0.01) is False
    event.set()
    assert await wait_event(event, 10) is True


async def test_a_cancellation_that_comes_with_the_event_is_kept() -> None:
    event = asyncio.Event()
    rounds = 0

    async def loop() -> None:
        nonlocal rounds
        while True:
            rounds += 1
            await wait_event(event, 60)
            event.clear()

    task = asyncio.create_task(loop())
    await asyncio.sleep(0)  # the loop waits now
    event.set()  # the inner wait ends ...
    task.cancel()  # ... and the cancellation comes in the same turn
    done, _ = await asyncio.wait({task}, timeout=5)
    try:
        assert done, "the cancellation was lost: the loop waits again"
        assert task.cancelled() and rounds == 1
    finally:
        task.cancel()


async def test_a_cancellation_a_call_turned_into_its_own_error_still_stops_the_loop() -> None:
    """A loop that logs its work's failures and waits again (the outbound dispatcher) stops
    when a cancellation reached it as another error: the next wait raises it."""
    event = asyncio.Event()
    failures = 0

    async def call() -> None:  # as a driver cancelled mid-call answers: its own error
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError as exc:
            raise RuntimeError("connection lost") from exc

    async def loop() -> None:
        nonlocal failures
        while True:
            try:
                await call()
            except Exception:
                failures += 1
            await wait_event(event, 0.01)

    task = asyncio.create_task(loop())
    await asyncio.sleep(0.05)  # in the call
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5)
    try:
        assert done, "the loop went on after its cancellation became another error"
        assert task.cancelled() and failures == 1
    finally:
        task.cancel()
