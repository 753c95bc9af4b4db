"""Rejection reason codes, each produced by a real signed or unsigned request: one info line per
rejected delivery naming its reason, the reason on the delivery record (never in the answer to
the sender), and on the record of accepted deliveries their request headers with credentials
redacted, of duplicates the first delivery's id. The records travel the way each supported
shape carries them (embedded: the outbox into SQLite; Redis and Redis Cluster: the streams into
PostgreSQL); what the request path alone decides runs on the embedded one."""

from __future__ import annotations

import base64
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook
from stripe import WebhookSignature

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.ingress.body import MAX_BODY
from tests.ingress.hooks import REQUEST_HANDLING, Hook, add_webhook, backend_settings, redis_url_for
from tests.support import GatewayClient, World, eventually

SW_SECRET = "whsec_" + base64.b64encode(b"standard-webhooks-test-key-32byt").decode()
STRIPE_SECRET = "whsec_stripe_test_secret"
BODY = '{"type":"invoice.paid"}'
AUTH_FAILURE_LIMIT = 3


@pytest.fixture
def gw(
    request: pytest.FixtureRequest,
    backend_kind: str,
    sqlite_store: Callable[..., str],
    redis_url: str,
    redis_prefix: str,
) -> Iterator[GatewayClient]:
    """The embedded backend on SQLite; Redis and Redis Cluster on PostgreSQL."""
    store = sqlite_store() if backend_kind == "memory" else request.getfixturevalue("postgres_url")
    # the evaluator runs, so that rejections logged to Redis streams reach the SQL log
    settings = backend_settings(
        backend_kind,
        store,
        redis_url_for(backend_kind, request, redis_url),
        redis_prefix,
        evaluator="inline",
        auth_failure_limit=str(AUTH_FAILURE_LIMIT),
    )
    with GatewayClient.running(settings) as client:
        yield client


def _records(world: World, hook: Hook, count: int) -> list[dict[str, Any]]:
    path = f"/factory/{world.factory_uid}/webhooks/{hook.uid}/deliveries"

    def logged() -> list[dict[str, Any]] | None:
        page = world.api("GET", path, params={"limit": 100}).json()
        items: list[dict[str, Any]] = page["deliveries"]
        return items if len(items) >= count else None

    found: list[dict[str, Any]] = eventually(logged)
    return found


def _stripe(body: str, skew: int = 0) -> dict[str, str]:
    header = WebhookSignature.generate_signature_header(
        body, STRIPE_SECRET, int(time.time()) + skew
    )
    return {"Stripe-Signature": header}


def _standard(msg_id: str, body: str) -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(SW_SECRET).sign(msg_id, now, body),
    }


# reason -> (how the webhook authenticates, the request that is refused for that reason)
Send = Callable[[GatewayClient, Hook], Any]
AUTH_CASES: dict[Reason, tuple[dict[str, Any], Send]] = {
    Reason.HEADER_MISSING: ({"mode": "token"}, lambda gw, h: gw.post(h.path, content=BODY)),
    Reason.HEADER_MALFORMED: (
        {"mode": "signature", "scheme": "stripe", "secret": STRIPE_SECRET},
        lambda gw, h: gw.post(h.path, content=BODY, headers={"Stripe-Signature": "garbage"}),
    ),
    Reason.SIGNATURE_MISMATCH: (
        {"mode": "signature", "scheme": "standard_webhooks", "secret": SW_SECRET},
        lambda gw, h: gw.post(h.path, content=BODY + " ", headers=_standard("m1", BODY)),
    ),
    Reason.TIMESTAMP_STALE: (
        {"mode": "signature", "scheme": "stripe", "secret": STRIPE_SECRET},
        lambda gw, h: gw.post(h.path, content=BODY, headers=_stripe(BODY, -301)),
    ),
    Reason.TIMESTAMP_FUTURE: (
        {"mode": "signature", "scheme": "stripe", "secret": STRIPE_SECRET},
        lambda gw, h: gw.post(h.path, content=BODY, headers=_stripe(BODY, 400)),
    ),
    Reason.TOKEN_UNKNOWN: (
        {"mode": "url_token"},
        lambda gw, h: gw.post(h.path.rsplit("/", 1)[0] + "/not-the-token", content=BODY),
    ),
    Reason.CREDENTIAL_UNUSABLE: (
        {"mode": "signature", "scheme": "github", "secret_name": "NO_SUCH_SECRET"},
        lambda gw, h: gw.post(h.path, content=BODY, headers={"X-Hub-Signature-256": "x"}),
    ),
}


def test_each_authentication_failure_has_its_reason(
    gw: GatewayClient, gw_world: World, caplog: pytest.LogCaptureFixture
) -> None:
    answers = set()
    hooks: dict[Reason, Hook] = {}
    with caplog.at_level(logging.INFO, logger="gateway.ingress"):
        for reason, (how, send) in AUTH_CASES.items():
            hook = hooks[reason] = add_webhook(gw, gw_world, **how)
            response = send(gw, hook)
            assert response.status_code == 401, (reason, response.text)
            problem = response.json()
            answers.add((problem["type"], problem["title"], problem["detail"]))
            assert reason.value not in response.text
    # the sender learns nothing about the cause: every 401 reads the same
    assert len(answers) == 1, answers
    for reason, hook in hooks.items():
        (record,) = _records(gw_world, hook, 1)
        assert record["label"] == "Rejected (auth)"
        assert record["reason"] == reason.value, record
        lines = [m for r in caplog.records if f"{hook.uid} rejected" in (m := r.getMessage())]
        assert lines == [
            f"ingress: delivery {record['delivery_id']} to webhook {hook.uid} rejected: "
            f"{reason.value}"
        ]


def test_refusals_after_authentication_have_their_reasons(
    gw: GatewayClient, gw_world: World, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="gateway.ingress"):
        limited = add_webhook(gw, gw_world)
        for _ in range(AUTH_FAILURE_LIMIT + 1):
            last = gw.post(limited.path, content=BODY, headers={"Authorization": "Bearer nope"})
        assert last.status_code == 429

        big = add_webhook(gw, gw_world)
        too_large = gw.post(big.path, content=b"x" * (MAX_BODY + 1), headers=big.auth)
        assert too_large.status_code == 413

        broken = add_webhook(gw, gw_world)
        invalid = gw.post(broken.path, content=b"{not json", headers=broken.auth)
        assert invalid.status_code == 400

        busy = add_webhook(gw, gw_world)
        for n in range(61):  # the rate limit is 60 per rolling minute
            answer = gw.post(busy.path, content=f'{{"n": {n}}}', headers=busy.auth)
        assert answer.status_code == 429

    by_reason = {
        Reason.AUTH_RATE_LIMITED: (limited, AUTH_FAILURE_LIMIT + 1, "Rejected (rate limited)"),
        Reason.TOO_LARGE: (big, 1, "Rejected (too large)"),
        Reason.INVALID_JSON: (broken, 1, "Rejected (invalid JSON)"),
        Reason.RATE_LIMITED: (busy, 61, "Rejected (rate limited)"),
    }
    for reason, (hook, count, label) in by_reason.items():
        records = _records(gw_world, hook, count)
        rejected = [r for r in records if r["reason"] == reason.value]
        assert len(rejected) == 1, (reason, records)
        assert rejected[0]["label"] == label
        line = f"to webhook {hook.uid} rejected: {reason.value}"
        assert sum(line in r.getMessage() for r in caplog.records) == 1, reason


def test_accepted_keeps_redacted_headers_and_duplicates_name_the_first(
    gw: GatewayClient, gw_world: World
) -> None:
    hook = add_webhook(gw, gw_world, "signature", scheme="standard_webhooks", secret=SW_SECRET)
    msg_id = f"msg_{uuid.uuid4().hex}"
    headers = {**_standard(msg_id, BODY), "X-Trace": "abc", "X-Api-Key": "k-123"}
    first = gw.post(hook.path, content=BODY, headers={**headers, "Authorization": "Basic Zm9v"})
    assert first.status_code == 202
    first_id = first.json()["delivery_id"]
    again = gw.post(hook.path, content=BODY, headers=headers)
    assert again.json()["delivery_id"] == first_id

    records = _records(gw_world, hook, 2)
    (duplicate,) = [r for r in records if r["label"] == "Duplicate"]
    assert duplicate["duplicate_of"] == first_id and duplicate["reason"] is None
    path = f"/factory/{gw_world.factory_uid}/webhooks/{hook.uid}/deliveries/{first_id}"
    record = gw_world.api("GET", path).json()
    stored = record["headers"]
    assert stored["x-trace"] == "abc" and stored["webhook-id"] == msg_id
    for secret in ("authorization", "x-api-key", "webhook-signature", "webhook-timestamp"):
        assert stored[secret] == "[redacted]", secret
    assert "k-123" not in str(record) and headers["webhook-signature"] not in str(record)
    assert record["reason"] is None and record["duplicate_of"] is None


@REQUEST_HANDLING
def test_the_url_token_is_redacted_wherever_it_appears(gw: GatewayClient, gw_world: World) -> None:
    hook = add_webhook(gw, gw_world, "url_token")
    echoed = {"X-Original-URI": hook.path, "X-Forwarded-For": "192.0.2.7"}
    accepted = gw.post(hook.path, content=BODY, headers=echoed)
    assert accepted.status_code == 202
    delivery_id = accepted.json()["delivery_id"]
    path = f"/factory/{gw_world.factory_uid}/webhooks/{hook.uid}/deliveries/{delivery_id}"
    record = eventually(lambda: (r := gw_world.api("GET", path)).status_code == 200 and r.json())
    assert record["headers"]["x-original-uri"] == "[redacted]"
    assert record["headers"]["x-forwarded-for"] == "192.0.2.7"
    assert hook.secret not in str(record)


@REQUEST_HANDLING
def test_stale_signature_window_is_the_tolerance(gw: GatewayClient, gw_world: World) -> None:
    """Inside the tolerance a delivery is accepted, so the stale/future codes above come from
    the timestamp alone."""
    hook = add_webhook(gw, gw_world, "signature", scheme="stripe", secret=STRIPE_SECRET)
    for skew in (-200, 200):
        body = f'{{"skew": {skew}}}'
        assert gw.post(hook.path, content=body, headers=_stripe(body, skew)).status_code == 202
