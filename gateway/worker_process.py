"""`gateway worker`: the consumer alone, for scale-out next to ingress-only processes, and the
child process `gateway serve` starts when GATEWAY_EVALUATOR=process."""

from __future__ import annotations

import asyncio
import logging
import os
import signal

from gateway import logs, wiring
from gateway.allocator import map_large_blocks_apart
from gateway.evaluator.cpu_priority import leave_idle_cgroup, lower_priority
from gateway.services import build_services
from gateway.settings import Settings

log = logging.getLogger("gateway.evaluator")

PARENT_CHECK_S = 1.0


async def run_worker(settings: Settings, *, parent_pid: int | None = None) -> None:
    """Run the delivery consumer until SIGINT or SIGTERM, or until process `parent_pid` (the
    `gateway serve` that started this one) is no longer this process's parent."""
    logs.configure(settings.log_level, settings.log_format)
    priority = lower_priority(
        settings.evaluator_priority,
        settings.redis_prefix,
        idle_cgroup=settings.evaluator_idle_cgroup,
    )
    map_large_blocks_apart()
    services = build_services(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if parent_pid is not None:
        services.spawn(_watch_parent(parent_pid, stop), name="parent-watch")
    try:
        await wiring.start(services, with_worker=True)  # the consumer freezes what lasts (gc)
        log.info("gateway worker running (pid %d, %s)", os.getpid(), priority.description)
        await stop.wait()
    finally:
        await services.close()
        if priority.idle_cgroup is not None:
            leave_idle_cgroup(priority.idle_cgroup)
        log.info("gateway worker stopped")


async def _watch_parent(parent: int, stop: asyncio.Event) -> None:
    # nothing signals a parent's death portably (PR_SET_PDEATHSIG is Linux-only): poll
    while os.getppid() == parent:  # noqa: ASYNC110
        await asyncio.sleep(PARENT_CHECK_S)
    log.warning("the process that started this worker (%d) is gone; stopping", parent)
    stop.set()
