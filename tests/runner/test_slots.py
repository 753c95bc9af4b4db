"""The runner's slots: the call that reports a run's end claims without waiting; the poller
long-polls after it."""

from __future__ import annotations

from gateway.platform.runner.slots import Slots


def test_the_call_reporting_a_runs_end_never_long_polls() -> None:
    slots = Slots(1)
    first = slots.reserve()
    assert first.runs == 1 and first.long_poll
    slots.settle(first, 1)  # a run claimed: the slot is busy, nobody polls
    ended = slots.done_and_reserve()
    assert ended.runs == 1 and not ended.long_poll  # reported at once
    assert not slots.wait_for_long_poll(0.01)  # its slot is reserved meanwhile
    slots.settle(ended, 0)
    assert slots.wait_for_long_poll(0.01)  # then the poller waits for the next run
    assert slots.reserve().long_poll
