"""Lower the evaluator's CPU priority, so ingress and Redis win on a shared host.

`idle` puts the process in Linux's SCHED_IDLE class (it runs on CPU time nothing else wants)
at nice 19; `low` is nice 10; `normal` (the default) changes nothing. Elsewhere `idle` falls
back to nice 19. `idle` and `low` risk starvation: on a host where other work wants the CPU the
evaluator gets little or none, and runs start late or never (docs/evaluator.md).

With Linux autogroup scheduling (the default on many kernels) CPU time is shared between
sessions first, and a nice value only counts within its session. A worker that leads its own
session (the child of `gateway serve`, a service manager's process) therefore also lowers its
session group's priority; a worker started from a shell leaves the shell's group alone.

SCHED_IDLE and nice only order tasks within their group: between groups (other sessions, other
services, Redis) the worker would still take its time slices, and a request woken behind it
waited for the slice to end (p99 6 -> 2 ms at 25 % load, 113 -> 17 ms at 80 %, measured with
`python -m benchmarks.run`). So `idle`, when the operator asks for it
(GATEWAY_EVALUATOR_IDLE_CGROUP=1: the gateway writes the host's cgroup tree only then), also
moves the process into the cgroup
`gateway-evaluator-<GATEWAY_REDIS_PREFIX>` beside its own (one per deployment, so gateways of
different deployments on one host never share or remove each other's), marked `cpu.idle`
(Linux 5.15+, cgroup v1 or v2): it then runs only on CPU time no other group wants, and a
waking task preempts it at once. This needs write access to the cgroup tree (root, or a
delegated one); without it the rest still applies.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from gateway.kernel.settings import EvaluatorPriority

AUTOGROUP = Path("/proc/self/autogroup")
CGROUP_ROOT = Path("/sys/fs/cgroup")
IDLE_CGROUP_PREFIX = "gateway-evaluator-"
NICENESS: dict[EvaluatorPriority, int] = {"idle": 19, "low": 10, "normal": 0}


@dataclass(frozen=True, slots=True)
class Lowered:
    description: str  # for the start-up log line
    idle_cgroup: Path | None = None  # to leave on the way out (see leave_idle_cgroup)


def idle_cgroup_name(deployment: str) -> str:
    """The idle cgroup of one deployment (its Redis key prefix), safe as a directory name."""
    return IDLE_CGROUP_PREFIX + "".join(c if c.isalnum() or c in "-_" else "_" for c in deployment)


def lower_priority(
    priority: EvaluatorPriority, deployment: str = "gw", *, idle_cgroup: bool = False
) -> Lowered:
    """Apply `priority` to this process; `deployment` names its idle cgroup, which is made (in
    the host's cgroup tree) only when `idle_cgroup` says the operator asked for it."""
    if priority == "normal":
        return Lowered("normal priority")
    os.nice(NICENESS[priority] - os.getpriority(os.PRIO_PROCESS, 0))
    niceness = os.getpriority(os.PRIO_PROCESS, 0)
    if os.getsid(0) == os.getpid() and AUTOGROUP.exists():
        with contextlib.suppress(OSError):  # not permitted or not supported: nice alone it is
            AUTOGROUP.write_text(str(niceness))
    if priority != "idle":
        return Lowered(f"nice {niceness}")
    applied = [f"nice {niceness}"]
    if hasattr(os, "SCHED_IDLE"):
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            applied.insert(0, "idle scheduling class")
    if not idle_cgroup:
        applied.append("no idle cgroup (GATEWAY_EVALUATOR_IDLE_CGROUP not set)")
        return Lowered(", ".join(applied))
    group = join_idle_cgroup(os.getpid(), idle_cgroup_name(deployment))
    applied.append(f"idle cgroup {group}" if group else "no idle cgroup (not permitted)")
    return Lowered(", ".join(applied), group)


def leave_idle_cgroup(group: Path) -> None:
    """Back into the parent cgroup; the idle one is removed unless another worker is in it."""
    with contextlib.suppress(OSError):
        (group.parent / "cgroup.procs").write_text(str(os.getpid()))
        group.rmdir()


def remove_idle_cgroup(
    name: str, membership: str | None = None, root: Path = CGROUP_ROOT
) -> list[Path]:
    """Remove the idle cgroup `name` beside this process's own cpu cgroups, once its worker is
    gone (a worker killed before it could leave it, or one starved of CPU until killed, leaves
    it behind); one that still holds a process stays. The groups removed."""
    if membership is None:
        try:
            membership = Path("/proc/self/cgroup").read_text()
        except OSError:
            return []
    removed = []
    for base in _cpu_cgroups(membership, root):
        group = base / name
        with contextlib.suppress(OSError):  # absent, or another worker is still in it
            group.rmdir()
            removed.append(group)
    return removed


def join_idle_cgroup(
    pid: int, name: str, membership: str | None = None, root: Path = CGROUP_ROOT
) -> Path | None:
    """Move `pid` into the `cpu.idle` cgroup beside its own cpu cgroup; its path, or None.

    `membership` is the process's /proc/<pid>/cgroup text (read when not given)."""
    if membership is None:
        try:
            membership = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            return None
    for base in _cpu_cgroups(membership, root):
        group = base / name
        created = not group.exists()
        try:
            group.mkdir(exist_ok=True)
            (group / "cpu.idle").write_text("1")
            (group / "cgroup.procs").write_text(str(pid))
        except OSError:
            if created:
                with contextlib.suppress(OSError):
                    group.rmdir()
            continue
        return group
    return None


def _cpu_cgroups(membership: str, root: Path) -> list[Path]:
    """The process's cgroups that have the CPU controller (`cpu.idle`): in cgroup v1 the
    `N:cpu,cpuacct:/path` line's hierarchy, in v2 the unified one (`0::/path`)."""
    found = []
    for line in membership.splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers and "cpu" not in controllers.split(","):
            continue
        # v1 mounts a hierarchy under its controllers' names; v2 at the root (or "unified")
        mounts = [root / controllers, root / "cpu"] if controllers else [root, root / "unified"]
        for mount in mounts:
            base = mount / path.lstrip("/")
            if (base / "cpu.idle").exists():
                found.append(base)
                break
    return found
