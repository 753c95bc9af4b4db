"""Every deployment docs/architecture.md#transports lists, started as `gateway serve` and `gateway
worker` start it (wiring.start): a delivery accepted by ingress reaches the evaluator through the
transport the table names, and is evaluated. The evaluator in a process of its own is a second
`wiring.start(with_worker=True)` here: it shares nothing with the serving one but the store,
Redis and the outbox file, as a process would (tests/evaluator/test_evaluator_process.py starts
a real child; tests/cluster the Redis Cluster variant of the Redis rows)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import pytest
from sqlalchemy import select

from gateway.composition import wiring
from gateway.foundation.metrics.counts import COUNTS
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.webhook_gateway.transports.outbox.source import OutboxSource
from gateway.webhook_gateway.transports.pending_log.source import PendingSource
from gateway.webhook_gateway.transports.redis_stream.source import StreamSource
from tests.conftest import make_settings
from tests.ingress.hooks import add_webhook
from tests.support import GatewayClient, World

# (store, Redis, where the evaluator runs) -> the transport between ingress and the evaluator
CELLS = [
    ("sqlite-file", False, "inline", OutboxSource),
    ("sqlite-file", False, "worker", OutboxSource),
    ("postgresql", False, "inline", PendingSource),
    ("postgresql", False, "worker", PendingSource),
    ("sqlite-file", True, "inline", StreamSource),
    ("sqlite-file", True, "worker", StreamSource),
    ("postgresql", True, "inline", StreamSource),
    ("postgresql", True, "worker", StreamSource),
]


def _cell_id(cell: tuple[str, bool, str, type]) -> str:
    store, redis, placement, _ = cell
    return f"{store}-{'redis' if redis else 'no_redis'}-{placement}"


@pytest.mark.parametrize("cell", CELLS, ids=[_cell_id(c) for c in CELLS])
def test_each_deployment_moves_a_delivery_to_the_evaluator(
    cell: tuple[str, bool, str, type],
    request: pytest.FixtureRequest,
    sqlite_store: Callable[..., str],
    redis_url: str,
    redis_prefix: str,
) -> None:
    store, uses_redis, placement, transport = cell
    if store == "postgresql":
        database_url = str(request.getfixturevalue("postgres_url"))
    else:
        database_url = sqlite_store()
    evaluator = "inline" if placement == "inline" else "off"
    prefix = f"{redis_prefix}:deploy:{_cell_id(cell)}"
    settings = make_settings(
        database_url, redis_url if uses_redis else None, prefix=prefix, evaluator=evaluator
    )
    with GatewayClient.running(settings) as gw:
        assert gw.portal is not None
        if placement == "inline":
            (consumer,) = [c for c in COUNTS.evaluators if c.database is gw.services.database]
            worker: Services | None = None
        else:
            start = functools.partial(wiring.start, settings, with_worker=True)
            worker, consumer = gw.portal.call(start)
            assert consumer is not None
        try:
            assert type(consumer.source) is transport
            hook = add_webhook(gw, World.create(gw))
            answer = gw.post(hook.path, json={"deployment": _cell_id(cell)}, headers=hook.auth)
            assert answer.status_code == 202, answer.text
            delivery_id = answer.json()["delivery_id"]
            assert _evaluated(gw, delivery_id), f"{delivery_id} was not evaluated"
        finally:
            if worker is not None:
                gw.portal.call(worker.close)


def _evaluated(gw: GatewayClient, delivery_id: str, timeout_s: float = 15.0) -> bool:
    d = t.deliveries

    async def evaluation(services: Services) -> str | None:
        async with services.database.read() as conn:
            query = select(d.c.evaluation).where(d.c.delivery_id == delivery_id)
            found: str | None = (await conn.execute(query)).scalar_one_or_none()
            return found

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if gw.run(evaluation) == "evaluated":
            return True
        time.sleep(0.05)
    return False
