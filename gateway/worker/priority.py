"""Lower the evaluator's CPU priority, so ingress and Redis win on a shared host.

`idle` puts the process in Linux's SCHED_IDLE class (it runs on CPU time nothing else wants)
at nice 19; `low` is nice 10; `normal` changes nothing. Elsewhere `idle` falls back to nice 19.

With Linux autogroup scheduling (the default on many kernels) CPU time is shared between
sessions first, and a nice value only counts within its session. A worker that leads its own
session (the child of `gateway serve`, a service manager's process) therefore also lowers its
session group's priority; a worker started from a shell leaves the shell's group alone.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from gateway.settings import EvaluatorPriority

AUTOGROUP = Path("/proc/self/autogroup")
NICENESS: dict[EvaluatorPriority, int] = {"idle": 19, "low": 10, "normal": 0}


def lower_priority(priority: EvaluatorPriority) -> str:
    """Apply `priority` to this process; returns a description for the start-up log line."""
    if priority == "normal":
        return "normal priority"
    os.nice(NICENESS[priority] - os.getpriority(os.PRIO_PROCESS, 0))
    niceness = os.getpriority(os.PRIO_PROCESS, 0)
    if os.getsid(0) == os.getpid() and AUTOGROUP.exists():
        with contextlib.suppress(OSError):  # not permitted or not supported: nice alone it is
            AUTOGROUP.write_text(str(niceness))
    if priority == "idle" and hasattr(os, "SCHED_IDLE"):
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            return f"idle scheduling class, nice {niceness}"
    return f"nice {niceness}"
