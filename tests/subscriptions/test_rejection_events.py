"""`delivery.rejected` for every refusal of a known source (docs/events.md#delivery-rejected),
on both shapes: refusals logged as records come through the evaluator, those past the
reject-log cap and those refused with the backlog full are counted by the backend and written
by the refusal flusher; the counts add up to every refused request, in a bounded number of
events."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select

from gateway.foundation.backends.contract import REJECT_LOG_LIMIT
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.kernel.settings import Settings
from gateway.webhook_gateway.deliveries import refusal_flusher
from tests.support import GatewayClient, World, eventually

REQUESTS = REJECT_LOG_LIMIT + 15  # past the cap: 15 are logged as no record


@pytest.fixture
def quick_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(refusal_flusher, "FLUSH_S", 0.2)


def rejected(client: GatewayClient, source_uid: str) -> list[dict[str, Any]]:
    async def read(services: Services) -> list[dict[str, Any]]:
        e = t.events
        query = select(e.c.data).where(e.c.type == "delivery.rejected").order_by(e.c.seq)
        async with services.database.read() as conn:
            found = [row.data for row in await conn.execute(query)]
        found = [json.loads(d) if isinstance(d, str) else d for d in found]
        return [d for d in found if d["source_uid"] == source_uid]

    return client.run(read)


def counted(events: list[dict[str, Any]]) -> Counter[str]:
    total: Counter[str] = Counter()
    for event in events:
        total[event["reason"]] += event["count"]
    return total


def test_every_refusal_is_counted_in_an_event(
    shape_settings: Callable[..., Settings], quick_flush: None
) -> None:
    with GatewayClient.running(shape_settings(auth_failure_limit="10")) as client:
        world = World.create(client)
        hook = world.api("POST", f"/factory/{world.factory_uid}/webhooks", json={"name": "x"})
        uid = hook.json()["uid"]
        statuses = Counter(
            client.post(
                f"/webhooks/w/{uid}", content=b"{}", headers={"Authorization": "Bearer wrong"}
            ).status_code
            for _ in range(REQUESTS)
        )
        assert statuses == {401: 10, 429: REQUESTS - 10}
        want = {"token_unknown": 10, "auth_rate_limited": REQUESTS - 10}
        events = eventually(lambda: (got := rejected(client, uid)) and counted(got) == want and got)
        assert counted(events) == want
        # coalesced: the 15 past the cap are one event (one flush), the logged ones a few
        assert len(events) <= 2 + REJECT_LOG_LIMIT // 2, len(events)
        assert all(e["factory_uid"] == world.factory_uid for e in events)


def test_a_full_backlog_refusal_is_counted(
    shape_settings: Callable[..., Settings], quick_flush: None
) -> None:
    # no evaluator in this process: the backlog stays full after one accepted delivery
    settings = shape_settings(max_backlog="1", evaluator="process")
    with GatewayClient.running(settings) as client:
        world = World.create(client)
        made = world.api("POST", f"/factory/{world.factory_uid}/webhooks", json={"name": "x"})
        hook = made.json()
        auth = {"Authorization": f"Bearer {hook['secret']}"}
        path = f"/webhooks/w/{hook['uid']}"
        assert client.post(path, content=b'{"n": 1}', headers=auth).status_code == 202
        for n in (2, 3, 4):
            full = client.post(path, content=json.dumps({"n": n}).encode(), headers=auth)
            assert full.status_code == 503, full.text
        if settings.uses_redis:  # the flusher runs beside an evaluator: flush here
            flush_redis(client)
        events = eventually(lambda: rejected(client, hook["uid"]))
        assert counted(events) == {"backlog_full": 3} and len(events) == 1


def flush_redis(client: GatewayClient) -> None:
    from gateway.foundation.backends.redis_clients import connect
    from gateway.foundation.backends.redis_keys import KeySpace
    from gateway.foundation.backends.redis_refusals import RedisRefusals

    async def flush(services: Services) -> int:
        settings = services.settings
        assert settings.redis_url is not None
        redis = connect(settings.redis_url, cluster=False)
        try:
            refusals = RedisRefusals(redis, KeySpace(settings.redis_prefix))
            return await refusal_flusher.flush(services.database, refusals)
        finally:
            await redis.aclose()

    assert client.run(flush) == 1
