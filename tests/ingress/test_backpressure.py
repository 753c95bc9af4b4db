"""GATEWAY_MAX_BACKLOG: past it ingress answers 503 backlog_full, records nothing, and recovers by
itself once the evaluator has caught up. Both backends, evaluator stopped."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from tests.evaluator.test_delivery_consumer import drain
from tests.ingress.hooks import add_webhook, backend_settings
from tests.support import GatewayClient, World, scaled


@pytest.fixture(params=["memory", "redis", "memory+postgresql"])
def gwc(
    request: pytest.FixtureRequest,
    sqlite_store: Callable[..., str],
    own_store: Callable[[str], str],
    redis_url: str,
    redis_prefix: str,
) -> Iterator[GatewayClient]:
    """Embedded on a SQLite file (deliveries wait in its outbox), Redis, and embedded on
    PostgreSQL (they wait in the delivery log as pending)."""
    kind, _, store = request.param.partition("+")
    # PostgreSQL: a database of its own, where no other test's pending deliveries count
    db = own_store(store) if store else sqlite_store()
    settings = backend_settings(kind, db, redis_url, redis_prefix, max_backlog="50")
    assert settings.evaluator == "off" and settings.max_backlog == 50
    with GatewayClient.running(settings) as client:
        yield client


def test_backlog_limit_refuses_exactly_past_it_and_recovers(gwc: GatewayClient) -> None:
    world = World.create(gwc)
    hook = add_webhook(gwc, world)
    answers = [
        gwc.post(hook.path, content=b'{"n": %d}' % i, headers=hook.auth | _id(i)) for i in range(60)
    ]
    assert Counter(a.status_code for a in answers) == {202: 50, 503: 10}
    assert all(a.status_code == 202 for a in answers[:50])
    refused = answers[-1]
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "backlog_full"
    assert int(refused.headers["retry-after"]) >= 1

    # a duplicate is still answered with its first delivery id, and records nothing
    again = gwc.post(hook.path, content=b'{"n": 0}', headers=hook.auth | _id(0))
    assert again.status_code == 202
    assert again.json()["delivery_id"] == answers[0].json()["delivery_id"]

    # nothing was recorded for the refused ones: the log holds the 50 accepted (with Redis
    # pending in the streams until the evaluator logs them) and no trace of the others. (The
    # duplicate's record: the embedded backend logs it in SQL; Redis, whose stream is what is
    # full, only counts it.)
    base = f"/factory/{world.factory_uid}/webhooks/{hook.uid}/deliveries"
    for evaluated in (False, True):
        if evaluated:
            assert drain(gwc) >= 50
        listed = world.api("GET", base, params={"limit": 100}).json()["deliveries"]
        labels = Counter(item["label"] for item in listed)
        assert labels.pop("Duplicate", 0) <= 1
        assert labels == {"Accepted": 50}

    # the evaluator caught up: deliveries are accepted again (within the backend's recount)
    deadline = time.monotonic() + scaled(5)
    while True:
        fresh = gwc.post(hook.path, content=b'{"n": 100}', headers=hook.auth | _id(100))
        if fresh.status_code == 202 or time.monotonic() > deadline:
            break
        assert fresh.status_code == 503
        time.sleep(0.1)
    assert fresh.status_code == 202, fresh.text
    assert fresh.json()["delivery_id"] not in {a.json().get("delivery_id") for a in answers}


def _id(i: int) -> dict[str, str]:
    return {"X-Service-Delivery-Id": f"evt-{i}"}
