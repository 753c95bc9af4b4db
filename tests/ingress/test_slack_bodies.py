"""Slack end to end, signed by the official SDK: the url_verification handshake answers its
challenge and records nothing; slash commands and interactivity (form-encoded) are stored as
JSON; an unsigned handshake is a 401 like any other delivery. Request handling: on the
embedded backend (the backends' part is tested in test_ingress_accept)."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

import httpx
from slack_sdk.signature import SignatureVerifier

from tests.ingress.hooks import REQUEST_HANDLING, Hook, add_webhook
from tests.support import GatewayClient, World, eventually

pytestmark = REQUEST_HANDLING

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def _post(gw: GatewayClient, hook: Hook, body: str, extra: dict[str, str] | None = None,
          secret: str = SECRET) -> httpx.Response:  # fmt: skip
    when = str(int(time.time()))
    signature = SignatureVerifier(secret).generate_signature(timestamp=when, body=body)
    assert signature is not None
    headers = {"X-Slack-Signature": signature, "X-Slack-Request-Timestamp": when, **(extra or {})}
    return gw.post(hook.path, content=body.encode(), headers=headers)


def _stored(world: World, hook: Hook, delivery_id: str) -> Any:
    path = f"/factory/{world.factory_uid}/webhooks/{hook.uid}/deliveries/{delivery_id}"
    record = eventually(lambda: (r := world.api("GET", path)).status_code == 200 and r.json())
    return record["payload"]


def _deliveries(world: World, hook: Hook) -> list[Any]:
    path = f"/factory/{world.factory_uid}/webhooks/{hook.uid}/deliveries"
    listed: list[Any] = world.api("GET", path).json()["deliveries"]
    return listed


def test_url_verification_answers_the_challenge_and_records_nothing(
    gw: GatewayClient, gw_world: World
) -> None:
    hook = add_webhook(gw, gw_world, "signature", scheme="slack", secret=SECRET)
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    handshake = json.dumps({"token": "t", "challenge": challenge, "type": "url_verification"})
    answer = _post(gw, hook, handshake)
    assert answer.status_code == 200
    assert answer.json() == {"challenge": challenge}
    assert _deliveries(gw_world, hook) == []
    forged = _post(gw, hook, handshake, secret="not-the-signing-secret")
    assert forged.status_code == 401 and "challenge" not in forged.text


def test_slash_commands_and_interactivity_are_stored_as_json(
    gw: GatewayClient, gw_world: World
) -> None:
    hook = add_webhook(gw, gw_world, "signature", scheme="slack", secret=SECRET)
    command = {"command": "/deploy", "text": "api to prod", "user_id": "U2147483697",
               "response_url": "https://hooks.slack.com/commands/1234/5678"}  # fmt: skip
    accepted = _post(gw, hook, urlencode(command), FORM)
    assert accepted.status_code == 202, accepted.text
    assert _stored(gw_world, hook, accepted.json()["delivery_id"]) == command

    action = {"type": "block_actions", "user": {"id": "U1"}, "actions": [{"value": "approve"}]}
    clicked = _post(gw, hook, urlencode({"payload": json.dumps(action)}), FORM)
    assert clicked.status_code == 202, clicked.text
    assert _stored(gw_world, hook, clicked.json()["delivery_id"]) == action


def test_an_ordinary_event_is_stored_as_sent(gw: GatewayClient, gw_world: World) -> None:
    hook = add_webhook(gw, gw_world, "signature", scheme="slack", secret=SECRET)
    event = {"type": "event_callback", "event": {"type": "message", "text": "url_verification"}}
    accepted = _post(gw, hook, json.dumps(event))
    assert accepted.status_code == 202, accepted.text
    assert _stored(gw_world, hook, accepted.json()["delivery_id"]) == event
