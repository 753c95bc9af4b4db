"""The states of a run and the one table of the changes between them (docs/runs-and-tasks.md,
"Run states"). Every rule that changes a run's state asks this table first: the runner protocol
(gateway/platform/runners), follow-ups (runs/conversations) and cancellation (runs/record). The
tests move runs through those same rules, so no test holds a run in a state the product could
not reach.

A run is created QUEUED. A runner claims it (CLAIMED), may report it accepted but not started
(PENDING), starts it (INPROGRESS), may wait for input (BLOCKED), and finishes it: SUCCEEDED or
FAILED from INPROGRESS (a finish from CLAIMED, PENDING or BLOCKED passes INPROGRESS first), ERROR
(the platform failed it) from wherever the runner held it. A runner that gives a run back, or
whose lease runs out, returns it to QUEUED; after its last attempt the lease's end FAILS it. A
follow-up answers a BLOCKED run (INPROGRESS again) or resumes an ended one (QUEUED: a new
execution of the same run). Cancelling ends any run that has not ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from gateway.kernel.errors import Conflict

RUN_STATES = (
    "QUEUED",
    "PENDING",
    "CLAIMED",
    "INPROGRESS",
    "SUCCEEDED",
    "FAILED",
    "BLOCKED",
    "ERROR",
    "CANCELLED",
)
if TYPE_CHECKING:
    RunState = str
else:  # the states the domain knows, as an enum (the API documents them)
    RunState = Literal[RUN_STATES]

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "ERROR", "CANCELLED"})
LIVE = frozenset({"CLAIMED", "INPROGRESS"})  # a session is running on a worker
HELD = frozenset({"CLAIMED", "PENDING", "INPROGRESS", "BLOCKED"})  # a runner works in them

Event = Literal[
    "claim",  # a runner takes the run (runners/claims.py)
    "accept",  # its runner accepted it, not started yet (progress PENDING)
    "start",  # its runner runs it (progress INPROGRESS; a finish passes it)
    "block",  # it waits for input (progress BLOCKED)
    "unblock",  # a follow-up brought the input (runs/conversations)
    "succeed",
    "fail",
    "error",  # the platform failed it (a finish with outcome ERROR)
    "release",  # given back by its runner, or its lease ran out: another runner may take it
    "expire",  # its lease ran out on its last attempt
    "abandon",  # pinned to a self-hosted worker that did not come for it in time
    "resume",  # a follow-up to an ended run: a new execution
    "cancel",
]


@dataclass(frozen=True, slots=True)
class Transition:
    sources: frozenset[str]  # the states the event may leave
    target: RunState  # the state it enters


TRANSITIONS: Mapping[Event, Transition] = MappingProxyType(
    {
        "claim": Transition(frozenset({"QUEUED"}), "CLAIMED"),
        "accept": Transition(frozenset({"CLAIMED"}), "PENDING"),
        "start": Transition(frozenset({"CLAIMED", "PENDING", "BLOCKED"}), "INPROGRESS"),
        "block": Transition(frozenset({"INPROGRESS"}), "BLOCKED"),
        "unblock": Transition(frozenset({"BLOCKED"}), "INPROGRESS"),
        "succeed": Transition(frozenset({"INPROGRESS"}), "SUCCEEDED"),
        "fail": Transition(frozenset({"INPROGRESS"}), "FAILED"),
        "error": Transition(HELD, "ERROR"),
        "release": Transition(HELD, "QUEUED"),
        "expire": Transition(HELD, "FAILED"),
        "abandon": Transition(frozenset({"QUEUED"}), "FAILED"),
        "resume": Transition(TERMINAL, "QUEUED"),
        "cancel": Transition(frozenset(RUN_STATES) - TERMINAL, "CANCELLED"),
    }
)


def allows(state: str, event: Event) -> bool:
    """Whether a run in `state` may take `event`."""
    return state in TRANSITIONS[event].sources


def next_state(state: str, event: Event) -> RunState:
    """The state `event` moves a run in `state` to; a 409 when it may not."""
    transition = TRANSITIONS[event]
    if state not in transition.sources:
        raise Conflict(f"state: a {state} run cannot {event}")
    return transition.target


def target_of(event: Event) -> RunState:
    """The state `event` enters, from whichever of its sources."""
    return TRANSITIONS[event].target


def sole_source(event: Event) -> str:
    """The one state `event` may leave (`claim`), for a statement's `state = ...`."""
    (state,) = TRANSITIONS[event].sources
    return state


def sources(event: Event) -> list[str]:
    """The states `event` may leave, sorted (for a statement's `state IN (...)`)."""
    return sorted(TRANSITIONS[event].sources)
