"""Provider connections at /webhooks/p/{uid}, on every backend: each provider's native
verification and delivery id, the same check order, limits and delivery log as custom
webhooks, Slack's handshake answered and its retries recognised as duplicates."""

from __future__ import annotations

import time
from typing import Any

import pytest

from gateway.foundation.services import Services
from tests.connections import signing
from tests.connections.signing import Signed
from tests.support import GatewayClient, World, eventually

SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
LINEAR_SECRET = "lin_wh_0123456789abcdef"
GITHUB_ISSUE = {"action": "labeled", "issue": {"number": 1}, "repository": {"full_name": "a/b"}}


def connect(world: World, provider: str, **body: Any) -> dict[str, Any]:
    response = world.api("POST", "/provider-connections", json={"provider": provider} | body)
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()
    made["path"] = made["ingress_url"].removeprefix("https://hooks.example.test")
    return made


def post(gw: GatewayClient, connection: dict[str, Any], signed: Signed) -> Any:
    return gw.post(connection["path"], content=signed.body, headers=signed.headers)


def logged(gw: GatewayClient, uid: str, delivery_id: str) -> Any:
    """The delivery's record as the backend holds it before evaluation (the evaluator is off):
    the Redis stream or the embedded outbox."""

    async def read(services: Services) -> Any:
        return await services.pending_deliveries.find(uid, delivery_id)

    return eventually(lambda: gw.run(read))


def payload_of(provider: str, delivery: str = "evt-1") -> Any:
    return {
        "github": GITHUB_ISSUE,
        "gitlab": {"object_kind": "merge_request"},
        "jira": {"webhookEvent": "jira:issue_created"},
        "linear": {"type": "Issue", "action": "create"},
        "slack": {"type": "event_callback", "event_id": delivery, "event": {"type": "app_mention"}},
    }[provider]


def _delivery(provider: str, secret: str, delivery: str) -> Signed:
    payload = payload_of(provider, delivery)
    if provider == "github":
        return signing.github(secret, "issues", payload, delivery)
    if provider == "gitlab":
        return signing.gitlab(secret, payload, delivery)
    if provider == "jira":
        return signing.jira(secret, payload, delivery)
    if provider == "linear":
        return signing.linear(secret, payload, delivery)
    return signing.slack(secret, payload)


@pytest.mark.parametrize("provider", ["github", "gitlab", "jira", "linear", "slack"])
def test_native_deliveries_are_accepted_once(
    gw: GatewayClient, gw_world: World, provider: str
) -> None:
    brought = {"slack": SLACK_SECRET, "linear": LINEAR_SECRET}.get(provider)
    made = connect(gw_world, provider, **({"secret": brought} if brought else {}))
    secret = brought or made["secret"]
    sent = _delivery(provider, secret, "evt-1")
    first = post(gw, made, sent)
    assert first.status_code == 202, first.text
    # the provider's resend of the same delivery (signed anew) is a duplicate
    again = post(gw, made, _delivery(provider, secret, "evt-1"))
    assert again.status_code == 202 and again.json() == first.json()
    other = post(gw, made, _delivery(provider, secret, "evt-2"))
    assert other.status_code == 202 and other.json() != first.json()
    forged = post(gw, made, _delivery(provider, secret + "x", "evt-3"))
    assert forged.status_code == 401 and forged.json()["code"] == "unauthenticated"
    record = logged(gw, made["uid"], first.json()["delivery_id"])
    assert record.webhook_uid == made["uid"] and record.label == "Accepted"
    assert record.identity == "evt-1" and record.payload == sent.body


def test_a_connection_is_not_a_webhook_and_back(gw: GatewayClient, gw_world: World) -> None:
    made = connect(gw_world, "github")
    signed = signing.github(made["secret"], "issues", GITHUB_ISSUE)
    assert gw.post(f"/webhooks/w/{made['uid']}", content=signed.body).status_code == 404
    assert gw.post(made["path"] + "/token", content=signed.body).status_code == 404
    hook = gw_world.api("POST", f"/factory/{gw_world.factory_uid}/webhooks", json={"name": "h"})
    bearer = {"Authorization": f"Bearer {hook.json()['secret']}"}
    assert (
        gw.post(f"/webhooks/p/{hook.json()['uid']}", content=b"{}", headers=bearer).status_code
        == 404
    )
    assert gw.post("/webhooks/p/pcn_unknown", content=signed.body).status_code == 404


def test_check_order_and_changes(gw: GatewayClient, gw_world: World) -> None:
    made = connect(gw_world, "github")
    secret = made["secret"]
    assert gw.post(made["path"], content=b" " * 262_145).status_code == 413
    unsigned = gw.post(made["path"], content=b"{}", headers={"x-github-event": "issues"})
    assert unsigned.status_code == 401
    bad_json = Signed(b"{nope", signing.github(secret, "issues", {}).headers)
    bad_json.headers["x-hub-signature-256"] = "sha256=" + signing._hex(secret, b"{nope")
    assert post(gw, made, bad_json).status_code == 400
    one = f"/provider-connections/{made['uid']}"
    # disabled: 404 at once; rotated: the old secret stops at once
    assert gw_world.api("PATCH", one, json={"enabled": False}).status_code == 200
    assert post(gw, made, signing.github(secret, "issues", GITHUB_ISSUE)).status_code == 404
    assert gw_world.api("PATCH", one, json={"enabled": True}).status_code == 200
    time.sleep(1.1)  # past the negative cache of a disabled uid
    assert post(gw, made, signing.github(secret, "issues", GITHUB_ISSUE)).status_code == 202
    fresh = gw_world.api("POST", one + "/rotate-secret").json()["secret"]
    assert post(gw, made, signing.github(secret, "issues", GITHUB_ISSUE)).status_code == 401
    assert post(gw, made, signing.github(fresh, "issues", GITHUB_ISSUE)).status_code == 202
    assert gw_world.api("DELETE", one).status_code == 204
    assert post(gw, made, signing.github(fresh, "issues", GITHUB_ISSUE)).status_code == 404


def test_rate_window_and_failed_auth_budget(gw: GatewayClient, gw_world: World) -> None:
    made = connect(gw_world, "jira")
    secret = made["secret"]
    bad = [post(gw, made, signing.jira("wrong", {"n": i})).status_code for i in range(11)]
    assert bad == [401] * 10 + [429]
    other = connect(gw_world, "jira")
    codes = [
        post(gw, other, signing.jira(other["secret"], {"n": i})).status_code for i in range(61)
    ]
    assert codes == [202] * 60 + [429]
    assert secret != other["secret"]


def test_slack_handshake_retries_and_forms(gw: GatewayClient, gw_world: World) -> None:
    made = connect(gw_world, "slack", secret=SLACK_SECRET)
    handshake = {
        "token": "Jhj5dZrVaK7ZwHHjRyZWjbDl",
        "challenge": "3eZbrw1aB",
        "type": "url_verification",
    }
    answered = post(gw, made, signing.slack(SLACK_SECRET, handshake))
    assert answered.status_code == 200 and answered.json() == {"challenge": "3eZbrw1aB"}
    unsigned = gw.post(made["path"], content=signing.encode(handshake))
    assert unsigned.status_code == 401
    event = {"type": "event_callback", "event_id": "Ev0PV52K21", "event": {"type": "app_mention"}}
    first = post(gw, made, signing.slack(SLACK_SECRET, event))
    assert first.status_code == 202
    # Slack's retry: a new timestamp and signature, X-Slack-Retry-Num, the same event_id
    retry = post(gw, made, signing.slack(SLACK_SECRET, event, retry=1, at=int(time.time()) + 1))
    assert retry.status_code == 202 and retry.json() == first.json()
    stale = post(gw, made, signing.slack(SLACK_SECRET, event, at=int(time.time()) - 301))
    assert stale.status_code == 401
    form = b"command=%2Fdeploy&text=api&user_id=U1&response_url=https%3A%2F%2Fhooks.slack.com%2Fx"
    command = signing.slack(
        SLACK_SECRET, None, body=form, content_type="application/x-www-form-urlencoded"
    )
    sent = post(gw, made, command)
    assert sent.status_code == 202
    record = logged(gw, made["uid"], sent.json()["delivery_id"])
    assert signing.json.loads(record.payload)["command"] == "/deploy"


def test_linear_timestamp_freshness(gw: GatewayClient, gw_world: World) -> None:
    made = connect(gw_world, "linear", secret=LINEAR_SECRET)
    now_ms = int(time.time() * 1000)
    stale = signing.linear(LINEAR_SECRET, {"type": "Issue"}, stamp_ms=now_ms - 61_000)
    assert post(gw, made, stale).status_code == 401
    fresh = signing.linear(LINEAR_SECRET, {"type": "Issue"}, stamp_ms=now_ms)
    assert post(gw, made, fresh).status_code == 202


def test_unusable_until_a_secret_is_brought(gw: GatewayClient, gw_world: World) -> None:
    made = connect(gw_world, "linear")
    signed = signing.linear(LINEAR_SECRET, {"type": "Issue"})
    assert post(gw, made, signed).status_code == 401
    one = f"/provider-connections/{made['uid']}/rotate-secret"
    assert gw_world.api("POST", one, json={"secret": LINEAR_SECRET}).status_code == 200
    assert post(gw, made, signing.linear(LINEAR_SECRET, {"type": "Issue"})).status_code == 202
