"""`gateway worker`: the consumer alone, for scale-out next to ingress-only processes."""

from __future__ import annotations

import asyncio
import logging
import signal

from gateway import wiring
from gateway.services import build_services
from gateway.settings import Settings

log = logging.getLogger("gateway.worker")


async def run_worker(settings: Settings) -> None:
    """Run the delivery consumer until SIGINT or SIGTERM."""
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(message)s")
    services = build_services(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await wiring.start(services, with_worker=True)
        log.info("gateway worker running")
        await stop.wait()
    finally:
        await services.close()
        log.info("gateway worker stopped")
