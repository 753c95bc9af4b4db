"""Before `gateway serve` or `gateway worker` starts: do the store and Redis answer?

They may be starting alongside (a compose file, a deploy), so a failing one is tried again, once
a second, for up to PREFLIGHT_S. The wait is never silent: as soon as an attempt fails, or takes
longer than SLOW_S (an address that drops packets answers nothing until the connect timeout),
one line on stderr says what is being tried and for how long; at the end, one line per service
that never answered says which, where, and why.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

from gateway.kernel.settings import Settings
from gateway.webhook_gateway.transports import readiness

PREFLIGHT_S = 5.0  # how long start-up waits for the store and Redis before it gives up
SLOW_S = 0.5  # an attempt that has not answered by then is announced while it goes on
RETRY_S = 1.0

Say = Callable[[str], None]


def reachable(settings: Settings, say: Say | None = None) -> bool:
    """True when the store (and Redis, when configured) answer; else False, said on stderr."""
    say = say or _stderr
    problems = asyncio.run(_preflight(settings, say))
    for problem in problems:
        say(f"cannot start: {problem}")
    return not problems


async def _preflight(settings: Settings, say: Say) -> list[str]:
    from gateway.foundation.store import create_database

    database = create_database(settings.database_url, synchronous=settings.sqlite_synchronous)
    redis = None
    probes = {f"the store at {masked(settings.database_url)}": readiness.store_probe(database)}
    if settings.redis_url is not None:
        from gateway.foundation.backends.redis_clients import connect

        redis = connect(settings.redis_url, cluster=settings.redis_cluster, socket_timeout=None)
        probes[f"redis at {masked(settings.redis_url)}"] = readiness.redis_probe(redis)
    try:
        return await _until_answered(probes, say)
    finally:
        await database.close()
        if redis is not None:
            await redis.aclose()


async def _until_answered(probes: dict[str, readiness.Probe], say: Say) -> list[str]:
    deadline = time.monotonic() + PREFLIGHT_S
    announced = False
    while True:
        attempts = {name: asyncio.ensure_future(probe()) for name, probe in probes.items()}
        await asyncio.wait(attempts.values(), timeout=SLOW_S)
        slow = [name for name, attempt in attempts.items() if not attempt.done()]
        if slow and not announced:
            say(f"waiting for {' and '.join(slow)} to answer (for up to {PREFLIGHT_S:.0f} s)")
            announced = True
        await asyncio.wait(attempts.values())  # each probe is bounded (readiness.TIMEOUT_S)
        problems = [f"{why} ({name})" for name, a in attempts.items() if (why := a.result())]
        if not problems or time.monotonic() >= deadline:
            return problems
        if not announced:
            say(f"{'; '.join(problems)}: trying again for up to {PREFLIGHT_S:.0f} s")
            announced = True
        await asyncio.sleep(min(RETRY_S, max(0.0, deadline - time.monotonic())))


def masked(url: str) -> str:
    """`url` without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _stderr(line: str) -> None:
    print(f"gateway: {line}", file=sys.stderr, flush=True)
