"""Wakeup: a notify wakes the waiters whose ticket was taken before it, even when it came
before they began to wait; without one, a wait ends at its time limit."""

from __future__ import annotations

import asyncio

from gateway.foundation.backends.wakeup import Wakeup


def test_a_notify_wakes_a_waiter() -> None:
    async def scenario() -> tuple[bool, bool]:
        wakeup = Wakeup()
        ticket = wakeup.ticket()
        waiting = asyncio.create_task(Wakeup.wait(ticket, 30.0))
        await asyncio.sleep(0)
        wakeup.notify()
        woken = await asyncio.wait_for(waiting, 5.0)
        # a later ticket is not woken by that notify
        late = await Wakeup.wait(wakeup.ticket(), 0.01)
        return woken, late

    assert asyncio.run(scenario()) == (True, False)


def test_a_notify_before_the_wait_is_not_lost() -> None:
    async def scenario() -> bool:
        wakeup = Wakeup()
        ticket = wakeup.ticket()  # taken before looking for runs...
        wakeup.notify()  # ...one is queued while looking...
        return await Wakeup.wait(ticket, 30.0)  # ...so the wait returns at once

    assert asyncio.run(asyncio.wait_for(scenario(), 5.0)) is True
