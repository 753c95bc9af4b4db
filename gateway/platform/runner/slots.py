"""The runner's slots: how many runs it may claim at a given moment.

`size` slots, less the runs executing and the runs that claims in flight may bring. Calls that
claim reserve the free slots first, so calls made at the same time never claim more runs than
the runner can execute. At most one call long-polls at a time (the others do not wait)."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    """What a call may claim: `runs` slots reserved for it; `long_poll`: it may wait."""

    runs: int
    long_poll: bool


class Slots:
    def __init__(self, size: int) -> None:
        self.size = size
        self._busy = 0  # runs executing (or being handed to a thread)
        self._reserved = 0  # slots that claims in flight may fill
        self._polling = False  # a call is long-polling
        self._closed = False  # the runner stops: no more claims
        self._changed = threading.Condition()

    def reserve(self) -> Claim:
        """Reserves every free slot for one call; `settle` must follow."""
        with self._changed:
            return self._reserve()

    def done_and_reserve(self) -> Claim:
        """A run ended: its slot, and every other free one, is reserved for the call that
        reports it (at once, so the long-poll does not take it first); `settle` must follow.
        That call never waits: the run's end is reported, and logged, when it happens, not
        when the queue next has a run or the long-poll times out; the poller waits after."""
        with self._changed:
            self._busy -= 1
            return self._reserve(may_wait=False)

    def _reserve(self, *, may_wait: bool = True) -> Claim:
        runs = self._free()
        long_poll = may_wait and runs > 0 and not self._polling
        self._reserved += runs
        self._polling = self._polling or long_poll
        return Claim(runs, long_poll)

    def settle(self, claim: Claim, claimed: int) -> None:
        """The call of `claim` answered with `claimed` runs (0 if it failed): they fill slots,
        the rest of the reservation is free again."""
        with self._changed:
            self._reserved -= claim.runs
            self._busy += claimed
            if claim.long_poll:
                self._polling = False
            self._changed.notify_all()

    def done(self) -> None:
        """A run ended (or was not executed): its slot is free."""
        with self._changed:
            self._busy -= 1
            self._changed.notify_all()

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def wait_for_long_poll(self, timeout: float) -> bool:
        """Waits until a slot is free and no call long-polls; False after `timeout` or once
        closed."""
        with self._changed:
            ready = self._changed.wait_for(
                lambda: self._closed or (self._free() > 0 and not self._polling), timeout
            )
            return ready and not self._closed

    def _free(self) -> int:
        return 0 if self._closed else self.size - self._busy - self._reserved
