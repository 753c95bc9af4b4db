"""`gateway listen` (docs/events.md#gateway-listen): a webhook's deliveries on a served
gateway reach a local port with their body and headers, one line each; after the gateway was
gone a moment, the next delivery comes once and none is repeated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import pytest

from tests.subscriptions.receiver import Receiver, receiving
from tests.subscriptions.served import served
from tests.support import World, scaled

pytestmark = pytest.mark.slow  # a gateway served, a CLI process


def deliver(world: World, webhook: dict[str, Any], n: int) -> None:
    answer = world.client.post(
        f"/webhooks/w/{webhook['uid']}",
        content=json.dumps({"n": n, "text": "héllo"}).encode(),
        headers={
            "Authorization": f"Bearer {webhook['secret']}",
            "Content-Type": "application/json",
            "X-Custom-Event": f"thing.{n}",
        },
    )
    assert answer.status_code == 202, answer.text


def test_listen_forwards_deliveries_and_resumes(world: World) -> None:
    made = world.api("POST", f"/factory/{world.factory_uid}/webhooks", json={"name": "dev"})
    webhook = made.json()
    with receiving() as local:
        listen = _first_delivery(world, webhook, local)
        try:
            # the gateway's server was gone a moment: a delivery meanwhile comes once it is back
            deliver(world, webhook, 2)
            with served(world.client, listen.port):
                assert listen.process.wait(scaled(60)) == 0
        finally:
            listen.process.kill()
        assert [json.loads(r.body)["n"] for r in local.requests] == [1, 2]
        assert local.requests[1].headers["x-custom-event"] == "thing.2"
    assert listen.process.stdout is not None
    with listen.process.stdout as stdout:
        output = stdout.read()
    assert "connection lost" in output and output.count("-> POST") == 1, output


@dataclass
class Listening:
    process: subprocess.Popen[str]
    port: int


def _first_delivery(world: World, webhook: dict[str, Any], local: Receiver) -> Listening:
    """`gateway listen` started against a served gateway that forwards delivery 1, then the
    gateway's server stopped (the client's app stays up)."""
    with served(world.client) as port:
        env = {
            **os.environ,
            "GATEWAY_API_URL": f"http://127.0.0.1:{port}",
            "GATEWAY_API_KEY": world.user_key,
        }
        listen = subprocess.Popen(
            [sys.executable, "-m", "gateway", "listen", "--webhook", webhook["uid"],
             "--forward-to", local.url, "--count", "2"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        try:
            assert listen.stdout is not None
            assert "listening to" in listen.stdout.readline()
            time.sleep(scaled(1))  # its stream is open
            deliver(world, webhook, 1)
            first = local.wait_for(1, scaled(20))
            assert len(first) == 1, "not forwarded"
            assert json.loads(first[0].body) == {"n": 1, "text": "héllo"}
            assert first[0].headers["x-custom-event"] == "thing.1"
            assert first[0].headers["content-type"] == "application/json"
            assert "authorization" not in first[0].headers  # redacted: never forwarded
            assert first[0].path == "/hook"
            line = listen.stdout.readline()
            assert f"-> POST {local.url} 200 " in line and line.rstrip().endswith(" ms"), line
        except BaseException:
            listen.kill()
            raise
    return Listening(listen, port)
