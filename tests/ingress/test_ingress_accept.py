from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import orjson
import pytest

from tests.ingress.hooks import (
    REQUEST_HANDLING,
    add_webhook,
    backend_settings,
    change_webhook,
    redis_url_for,
)
from tests.support import GatewayClient, World


def test_token_delivery_is_accepted_once(gw: GatewayClient, gw_world: World) -> None:
    hook = add_webhook(gw, gw_world)
    first = gw.post(hook.path, content=b'{"a": 1}', headers=hook.auth)
    assert first.status_code == 202
    delivery_id = first.json()["delivery_id"]
    assert delivery_id.startswith("dlv_")
    # same body, no id header: identity is the body hash -> duplicate answers the FIRST id
    again = gw.post(hook.path, content=b'{"a": 1}', headers=hook.auth)
    assert again.status_code == 202 and again.json() == {"delivery_id": delivery_id}
    other = gw.post(hook.path, content=b'{"a": 2}', headers=hook.auth)
    assert other.status_code == 202 and other.json()["delivery_id"] != delivery_id


@REQUEST_HANDLING
def test_identity_preference(gw: GatewayClient, gw_world: World) -> None:
    hook = add_webhook(gw, gw_world, delivery_id_header="X-Event-Id")
    send = lambda body, **h: gw.post(hook.path, content=body, headers={**hook.auth, **h})  # noqa: E731
    a = send(b"1", **{"X-Event-Id": "evt-1", "X-Service-Delivery-Id": "s-1"}).json()
    # the configured header wins over X-Service-Delivery-Id, whatever the body
    assert send(b"2", **{"X-Event-Id": "evt-1", "X-Service-Delivery-Id": "s-2"}).json() == a
    b = send(b"3", **{"X-Service-Delivery-Id": "s-1"}).json()
    assert b != a
    assert send(b"4", **{"X-Service-Delivery-Id": "s-1"}).json() == b


@REQUEST_HANDLING
def test_any_json_value_and_content_type_not_enforced(gw: GatewayClient, gw_world: World) -> None:
    hook = add_webhook(gw, gw_world)
    for body in (b"[1,2]", b'"text"', b"null", b"3.5", b"true", b'{"deep":{"x":[1]}}'):
        response = gw.post(
            hook.path, content=body, headers={**hook.auth, "Content-Type": "text/plain"}
        )
        assert response.status_code == 202, body


@REQUEST_HANDLING
def test_check_order_and_problems(gw: GatewayClient, gw_world: World) -> None:
    hook = add_webhook(gw, gw_world)

    def problem(response, status: int, code: str) -> None:  # type: ignore[no-untyped-def]
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == code

    problem(gw.post("/webhooks/w/wh_unknown", content=b"{}"), 404, "not_found")
    problem(gw.get(hook.path), 405, "method_not_allowed")
    problem(gw.post(hook.path + "/extra/segments", content=b"{}"), 404, "not_found")
    # token mode has no token path segment
    problem(gw.post(f"{hook.path}/{hook.secret}", content=b"{}"), 404, "not_found")
    # too large is decided before authentication
    problem(gw.post(hook.path, content=b" " * 262_145), 413, "payload_too_large")
    assert gw.post(hook.path, content=b" " * 262_142 + b"{}", headers=hook.auth).status_code == 202
    problem(gw.post(hook.path, content=b"{}"), 401, "unauthenticated")
    problem(
        gw.post(hook.path, content=b"{}", headers={"Authorization": "Bearer no"}),
        401,
        "unauthenticated",
    )
    # JSON is parsed only after authentication: garbage without a token is a 401, not a 400
    problem(gw.post(hook.path, content=b"{nope"), 401, "unauthenticated")
    problem(gw.post(hook.path, content=b"{nope", headers=hook.auth), 400, "invalid_json")


def test_disabled_and_deleted_webhooks_are_404(gw: GatewayClient, gw_world: World) -> None:
    hook = add_webhook(gw, gw_world)
    assert gw.post(hook.path, content=b"1", headers=hook.auth).status_code == 202
    change_webhook(gw, hook.uid, enabled=False)
    assert gw.post(hook.path, content=b"2", headers=hook.auth).status_code == 404
    change_webhook(gw, hook.uid, enabled=True)
    assert gw.post(hook.path, content=b"3", headers=hook.auth).status_code == 202
    from gateway.foundation.store.types import utcnow

    change_webhook(gw, hook.uid, deleted_at=utcnow())
    assert gw.post(hook.path, content=b"4", headers=hook.auth).status_code == 404


def test_rotation_takes_effect_immediately(gw: GatewayClient, gw_world: World) -> None:
    from gateway.kernel.security import hash_token

    hook = add_webhook(gw, gw_world)
    change_webhook(gw, hook.uid, token_hash=hash_token("wht_new"))
    assert gw.post(hook.path, content=b"1", headers=hook.auth).status_code == 401
    fresh = {"Authorization": "Bearer wht_new"}
    assert gw.post(hook.path, content=b"1", headers=fresh).status_code == 202


@REQUEST_HANDLING
def test_url_token_mode(gw: GatewayClient, gw_world: World) -> None:
    hook = add_webhook(gw, gw_world, "url_token")
    assert gw.post(hook.path, content=b"{}").status_code == 202
    assert gw.post(f"/webhooks/w/{hook.uid}/wrong", content=b"{}").status_code == 401
    assert gw.post(f"/webhooks/w/{hook.uid}", content=b"{}").status_code == 401
    # a bearer header is no substitute for the path token
    bearer = {"Authorization": f"Bearer {hook.secret}"}
    assert gw.post(f"/webhooks/w/{hook.uid}", content=b"{}", headers=bearer).status_code == 401


@REQUEST_HANDLING
def test_managed_team_secret(gw: GatewayClient, gw_world: World) -> None:
    from gateway.foundation.accounts import identities

    async def secret(services):  # type: ignore[no-untyped-def]
        async with services.database.transaction() as conn:
            await identities.set_team_secret(
                conn, services.secret_box, gw_world.team_uid, "hook-token", "tok-from-team"
            )

    gw.run(secret)
    hook = add_webhook(gw, gw_world, "token", secret="tok-from-team", secret_name="hook-token")
    assert gw.post(hook.path, content=b"{}", headers=hook.auth).status_code == 202
    wrong = {"Authorization": "Bearer tok-other"}
    assert gw.post(hook.path, content=b"{}", headers=wrong).status_code == 401


def test_rate_limit_sliding_window(gw: GatewayClient, gw_world: World) -> None:
    hook = add_webhook(gw, gw_world)
    codes = [
        gw.post(hook.path, content=orjson.dumps(i), headers=hook.auth).status_code
        for i in range(60)
    ]
    assert codes == [202] * 60
    limited = gw.post(hook.path, content=b'"x"', headers=hook.auth)
    assert limited.status_code == 429 and limited.json()["code"] == "rate_limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    # invalid JSON and duplicates counted too; rate 429 precedes 400
    assert gw.post(hook.path, content=b"{bad", headers=hook.auth).status_code == 429


def test_failed_auth_budget_refuses_failed_authentications_only(
    gw: GatewayClient, gw_world: World
) -> None:
    hook = add_webhook(gw, gw_world)
    bad = {"Authorization": "Bearer wrong"}
    codes = [gw.post(hook.path, content=b"{}", headers=bad).status_code for _ in range(11)]
    assert codes == [401] * 10 + [429]
    # budget spent by a stranger at the same address: the real sender is still accepted
    sent = [gw.post(hook.path, content=b"[%d]" % n, headers=hook.auth) for n in range(3)]
    assert [r.status_code for r in sent] == [202] * 3
    assert len({r.json()["delivery_id"] for r in sent}) == 3
    # ... and the stranger is still refused
    locked = gw.post(hook.path, content=b"{}", headers=bad)
    assert locked.status_code == 429 and int(locked.headers["retry-after"]) >= 1


def test_behind_a_trusted_proxy_each_sender_has_its_own_budget(
    request: pytest.FixtureRequest,
    backend_kind: str,
    tmp_path: Path,
    redis_url: str,
    redis_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = redis_url_for(backend_kind, request, redis_url)
    settings = backend_settings(
        backend_kind, f"sqlite:///{tmp_path}/gw.db", url, redis_prefix, trusted_proxies="10.0.0.0/8"
    )
    with (
        caplog.at_level(logging.WARNING, logger="gateway.proxies"),
        GatewayClient.running(settings, peer=("10.0.0.1", 40000)) as gw,
    ):
        hook = add_webhook(gw, World.create(gw))
        stranger = {"Authorization": "Bearer wrong", "X-Forwarded-For": "198.51.100.6"}
        codes = [gw.post(hook.path, content=b"{}", headers=stranger).status_code for _ in range(11)]
        assert codes == [401] * 10 + [429]
        # another address behind the same load balancer has a budget of its own
        other = {**stranger, "X-Forwarded-For": "198.51.100.7"}
        assert gw.post(hook.path, content=b"{}", headers=other).status_code == 401
        real = {**hook.auth, "X-Forwarded-For": "198.51.100.6"}
        assert gw.post(hook.path, content=b"{}", headers=real).status_code == 202
    assert not [r for r in caplog.records if r.name == "gateway.proxies"]  # all trusted


def test_forwarded_for_from_an_untrusted_peer_is_ignored_and_warned_about_once(
    gw: GatewayClient, gw_world: World, caplog: pytest.LogCaptureFixture
) -> None:
    hook = add_webhook(gw, gw_world)
    with caplog.at_level(logging.WARNING, logger="gateway.proxies"):
        for n in range(11):  # a different forged address each time: one budget all the same
            forged = {"Authorization": "Bearer wrong", "X-Forwarded-For": f"198.51.100.{n}"}
            last = gw.post(hook.path, content=b"{}", headers=forged)
    assert last.status_code == 429
    warned = [r.getMessage() for r in caplog.records if r.name == "gateway.proxies"]
    assert len(warned) == 1 and warned[0].startswith("X-Forwarded-For from testclient, ")


@REQUEST_HANDLING
@pytest.mark.parametrize("header", ["Authorization", "authorization"])
def test_header_names_case_insensitive(gw: GatewayClient, gw_world: World, header: str) -> None:
    hook = add_webhook(gw, gw_world)
    response = gw.post(hook.path, content=b"{}", headers={header: f"Bearer {hook.secret}"})
    assert response.status_code == 202


def test_body_hash_identity() -> None:
    from gateway.webhook_gateway.ingress.delivery_identity import delivery_identity

    body = b'{"k":"v"}'
    assert delivery_identity(None, {}, None, body) == "sha256:" + hashlib.sha256(body).hexdigest()
    assert delivery_identity("x-id", {"x-id": "a"}, "p", body) == "a"
    assert delivery_identity("x-id", {}, "p", body) == "p"
    assert delivery_identity(None, {"x-service-delivery-id": "s"}, None, body) == "s"
