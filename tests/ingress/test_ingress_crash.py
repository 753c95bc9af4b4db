"""SIGKILL a real `gateway serve` under load: every delivery that got a 202 is durable, and a
restarted server (with the evaluator) drains every one of them into the deliveries table."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import sqlite3
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from gateway.foundation.services import build_services
from gateway.foundation.store import tables as t
from gateway.webhook_gateway.transports.outbox import file as outbox
from gateway.webhook_gateway.transports.redis_stream.source import CLAIM_EVERY_S, CLAIM_IDLE_MS
from testbed.procs import free_port
from tests.conftest import make_settings
from tests.ingress.hooks import gateway_env, prepare_token_webhook, serve_gateway, stop_gateway
from tests.support import scaled

pytestmark = pytest.mark.slow
TOKEN = "wht_crash_test_token"


async def _logged(settings, *, evaluated: bool = False) -> set[str]:  # type: ignore[no-untyped-def]
    """Accepted deliveries in the SQL log;
    with `evaluated`, only those the evaluator is done with."""
    d = t.deliveries
    query = select(d.c.delivery_id).where(d.c.label == "Accepted")
    if evaluated:
        query = query.where(d.c.evaluation == "evaluated")
    services = build_services(settings)
    try:
        async with services.database.read() as conn:
            return set((await conn.execute(query)).scalars())
    finally:
        await services.close()


def _pending(settings) -> set[str]:  # type: ignore[no-untyped-def]
    """Accepted deliveries still waiting outside the SQL log: in the Redis streams, or in the
    embedded backend's outbox beside its SQLite file."""
    if settings.redis_url is None:
        path = settings.database_url.split(":///", 1)[1] + outbox.SUFFIX
        with contextlib.closing(sqlite3.connect(path)) as conn:
            query = "SELECT delivery_id FROM outbox WHERE label = 'Accepted'"
            return {row[0] for row in conn.execute(query)}
    from redis import Redis

    from gateway.foundation.backends.redis_keys import KeySpace

    client = Redis.from_url(settings.redis_url)
    found = set()
    for stream in KeySpace(settings.redis_prefix).streams():
        for _, fields in client.xrange(stream):
            if fields[b"l"] == b"Accepted":
                found.add(fields[b"d"].decode())
    client.close()
    return found


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_sigkill_under_load_loses_no_accepted_delivery(
    kind: str, tmp_path: Path, redis_url: str, redis_prefix: str
) -> None:
    db = f"sqlite:///{tmp_path}/gw.db"
    values = {
        "database_url": db,
        "secret_key": base64.urlsafe_b64encode(b"k" * 32).decode(),
        "log_level": "warning",
    }
    if kind == "redis":
        values |= {"redis_url": redis_url, "redis_prefix": f"{redis_prefix}:{uuid.uuid4().hex}"}
    settings = make_settings(db, values.get("redis_url"), prefix=values.get("redis_prefix", "gw"))
    uid = asyncio.run(prepare_token_webhook(settings, TOKEN))
    env = gateway_env(**values)
    port = free_port()
    proc = serve_gateway(env, port)
    accepted: list[str] = []
    statuses: list[int] = []
    stop = threading.Event()

    def load(worker: int) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            n = 0
            while not stop.is_set():
                n += 1
                # a fresh identity per request; 429s after the 60th are fine
                try:
                    r = client.post(
                        f"/webhooks/w/{uid}",
                        content=b'{"w":%d,"n":%d}' % (worker, n),
                        headers={"Authorization": f"Bearer {TOKEN}"},
                    )
                except httpx.TransportError:
                    return
                statuses.append(r.status_code)
                if r.status_code == 202:
                    accepted.append(r.json()["delivery_id"])

    threads = [threading.Thread(target=load, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + scaled(10)
    while len(accepted) < 40 and time.monotonic() < deadline:
        time.sleep(0.001)  # kill while requests are in flight, before the 60/min budget is spent
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    stop.set()
    for thread in threads:
        thread.join(10)
    assert accepted, f"no delivery was accepted before the kill: {statuses[:5]}"

    # durable means: in the shard stream, or in the SQL log (evaluated or, embedded, pending)
    logged = asyncio.run(_logged(settings)) | _pending(settings)
    missing = set(accepted) - logged
    assert not missing, f"{len(missing)} of {len(accepted)} accepted deliveries lost"

    # the restarted server evaluates as by default: Redis in a child process, embedded inline
    evaluator = "process" if settings.uses_redis else "inline"
    _restart_and_drain(env | {"GATEWAY_EVALUATOR": evaluator}, settings, set(accepted), tmp_path)


def _restart_and_drain(
    env: dict[str, str],
    settings,
    accepted: set[str],
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """The restarted evaluator evaluates every accepted delivery."""
    log = tmp_path / "restarted.log"
    proc = serve_gateway(env, free_port(), log)
    try:
        # entries the killed consumer had read are taken over once idle for CLAIM_IDLE_MS
        deadline = time.monotonic() + CLAIM_IDLE_MS / 1000 + 2 * CLAIM_EVERY_S + scaled(5)
        while time.monotonic() < deadline:
            missing = accepted - asyncio.run(_logged(settings, evaluated=True))
            if not missing:
                return
            time.sleep(0.2)
    finally:
        stop_gateway(proc)
    pytest.fail(f"{len(missing)} of {len(accepted)} accepted deliveries not drained")
