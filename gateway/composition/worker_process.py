"""`gateway worker`: the consumer alone, for scale-out next to ingress-only processes, and the
child process `gateway serve` starts when GATEWAY_EVALUATOR=process."""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import os
import signal
import sys

from gateway.composition import wiring
from gateway.composition.collector import collect_less_often
from gateway.kernel import logs
from gateway.kernel.settings import Settings
from gateway.webhook_gateway.evaluator.cpu_priority import leave_idle_cgroup, lower_priority

log = logging.getLogger("gateway.evaluator")

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


async def run_worker(
    settings: Settings, *, parent_pid: int | None = None, lifeline_fd: int | None = None
) -> None:
    """Run the delivery consumer until SIGINT or SIGTERM, or until process `parent_pid` (the
    `gateway serve` that started this one) is gone: its parent-death signal (Linux), EOF on
    `lifeline_fd` (a pipe only that process writes), or a parent other than `parent_pid`."""
    logs.configure(settings.log_level, settings.log_format)
    if parent_pid is not None:
        die_with_parent()
    collect_less_often()
    priority = lower_priority(
        settings.evaluator_priority,
        settings.redis_prefix,
        idle_cgroup=settings.evaluator_idle_cgroup,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if lifeline_fd is not None:
        loop.add_reader(lifeline_fd, _on_lifeline, loop, lifeline_fd, stop)
    if parent_pid is not None and os.getppid() != parent_pid:  # gone before the signal was set
        log.warning("the process that started this worker (%d) is gone; stopping", parent_pid)
        stop.set()
    try:
        # the consumer freezes what lasts (gc)
        services, _consumer = await wiring.start(settings, with_worker=True)
        try:
            log.info(
                "gateway worker running (pid %d, %s, cyclic collector every %d allocations)",
                os.getpid(),
                priority.description,
                gc.get_threshold()[0],
            )
            await stop.wait()
        finally:
            await services.close()
    finally:
        if priority.idle_cgroup is not None:
            leave_idle_cgroup(priority.idle_cgroup)
        log.info("gateway worker stopped")


def die_with_parent() -> bool:
    """Linux: SIGTERM this process when the thread that started it ends (the parent-death
    signal; kept across exec). Elsewhere the lifeline alone tells. Whether it was set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _on_lifeline(loop: asyncio.AbstractEventLoop, fd: int, stop: asyncio.Event) -> None:
    """The lifeline is readable: EOF once every writer (the server) is gone."""
    try:
        data = os.read(fd, 64)
    except BlockingIOError:
        return
    except OSError:
        data = b""
    if data:
        return  # nobody writes to it; ignore
    loop.remove_reader(fd)
    log.warning("the server that started this worker is gone (its lifeline closed); stopping")
    stop.set()
