"""Smee-compatible channels (docs/events.md#smee-compatible-channels): the real smee-client
from npm forwards a signed delivery from a channel's URL to a local port with its body and
headers; after the gateway was gone a moment it resumes without a loss or a repeat (from the
stream's kept follower, and from the Last-Event-ID alone); a wrong or revoked token is a 404,
and a channel never shows another source's or team's deliveries."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from gateway.foundation.listen import messages
from gateway.webhook_gateway.deliveries import smee
from testbed.procs import free_port
from tests.connections import signing
from tests.connections.provider_world import connect, deliver
from tests.npm_packages import node, node_modules
from tests.subscriptions.receiver import Receiver, receiving
from tests.subscriptions.served import served
from tests.support import World, scaled

pytestmark = pytest.mark.slow  # a gateway served, a node process

SECRET = "smee-test-secret"


def github_hook(world: World) -> dict[str, Any]:
    made = world.api(
        "POST",
        f"/factory/{world.factory_uid}/webhooks",
        json={"name": "gh", "auth_mode": "signature", "signature_scheme": "github",
              "secret": SECRET},
    )  # fmt: skip
    assert made.status_code == 201, made.text
    return made.json()


def push(world: World, hook: dict[str, Any], n: int) -> tuple[bytes, dict[str, str]]:
    """A signed GitHub delivery, accepted: its body and the headers the receiver must get."""
    # compact, non-ASCII as UTF-8 (as GitHub sends): JSON.stringify gives the same bytes back
    payload = {"n": n, "ref": "refs/heads/main", "text": "héllo"}
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    raw = body.encode()
    signature = hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/044aadd",
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "4242",
        "X-Hub-Signature-256": f"sha256={signature}",
    }  # fmt: skip
    answer = world.client.post(f"/webhooks/w/{hook['uid']}", content=raw, headers=headers)
    assert answer.status_code == 202, answer.text
    return raw, headers


def open_channel(world: World, hook: dict[str, Any], port: int) -> str:
    made = world.api("POST", f"/webhooks/{hook['uid']}/channels", json={"description": "laptop"})
    assert made.status_code == 201, made.text
    channel = made.json()
    assert channel["uid"].startswith("chn_") and channel["source_uid"] == hook["uid"]
    token = channel["url"].rpartition("/")[2]
    assert token.startswith("smee_") and len(token) > 40
    return f"http://127.0.0.1:{port}/api/v1/channels/{token}"


@contextmanager
def smee_client(url: str, target: str) -> Iterator[subprocess.Popen[str]]:
    bin_path = node_modules() / "smee-client" / "bin" / "smee.js"
    process = subprocess.Popen(
        [node(), str(bin_path), "--url", url, "--target", target],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        assert "Connected" in process.stdout.readline()  # smee-client's first line
        yield process
    finally:
        process.kill()
        process.wait()
        assert process.stdout is not None
        process.stdout.close()


def check_received(local: Receiver, index: int, sent: tuple[bytes, dict[str, str]]) -> None:
    got = local.requests[index]
    body, headers = sent
    assert got.body == body  # byte for byte: compact JSON survives smee-client's re-encoding
    assert got.path == "/hook"
    for name in ("user-agent", "x-github-event", "x-github-delivery", "x-github-hook-id"):
        assert got.headers[name] == headers[_cased(headers, name)], name
    assert got.headers["content-type"] == "application/json"
    assert "x-hub-signature-256" not in got.headers  # redacted in the log: never forwarded
    assert "timestamp" not in got.headers and "query" not in got.headers


def _cased(headers: dict[str, str], name: str) -> str:
    return next(key for key in headers if key.lower() == name)


def test_smee_client_forwards_and_resumes(world: World) -> None:
    hook = github_hook(world)
    port = free_port()
    with receiving() as local, contextlib.ExitStack() as stack:
        with served(world.client, port):
            url = open_channel(world, hook, port)
            process = stack.enter_context(smee_client(url, local.url))
            time.sleep(scaled(1))  # its stream is open
        # the gateway's server gone a moment before any delivery (the app stays up): one
        # delivered meanwhile comes once it is back (the stream's `ready` id is its start)
        first = push(world, hook, 1)
        with served(world.client, port):
            assert len(local.wait_for(1, scaled(30))) == 1, "not forwarded"
            check_received(local, 0, first)
        # again after a delivery: from the follower the stream kept under the last id it sent
        second = push(world, hook, 2)
        with served(world.client, port):
            assert len(local.wait_for(2, scaled(30))) == 2, "not forwarded after a reconnect"
            check_received(local, 1, second)
            third = push(world, hook, 3)  # and live
            assert len(local.wait_for(3, scaled(20))) == 3, "not forwarded"
            check_received(local, 2, third)
        # again, the kept follower forgotten (another process, or long after): from the
        # Last-Event-ID alone
        smee.RESUMES._held.clear()
        fourth = push(world, hook, 4)
        with served(world.client, port):
            assert len(local.wait_for(4, scaled(30))) == 4, "not forwarded after a reconnect"
            check_received(local, 3, fourth)
            time.sleep(scaled(2))  # a repeat would have come by now
        assert process.poll() is None
        assert [json.loads(r.body)["n"] for r in local.requests] == [1, 2, 3, 4]


def test_channels_are_their_sources_own(world: World) -> None:
    hook = github_hook(world)
    base = f"/webhooks/{hook['uid']}/channels"
    stranger = world.api("POST", base, json={}, headers=world.stranger)
    assert stranger.status_code == 403, stranger.text
    assert world.api("GET", base, headers=world.stranger).status_code == 403
    agent = world.api("POST", base, json={}, headers=world.agent)
    assert agent.status_code == 403, agent.text
    missing = world.api("POST", "/webhooks/wh_missing/channels", json={})
    assert missing.status_code == 404

    made = world.api("POST", base, json={}).json()
    listed = world.api("GET", base).json()["channels"]
    assert [c["uid"] for c in listed] == [made["uid"]] and "url" not in listed[0]
    path = "/api/v1/channels/" + made["url"].rpartition("/")[2]
    wrong = world.client.get(path[:-4] + "AAAA", headers={"Accept": "text/event-stream"})
    assert wrong.status_code == 404, wrong.text
    assert world.client.get("/api/v1/channels/nope").status_code == 404
    gone = world.api("DELETE", f"{base}/{made['uid']}", headers=world.stranger)
    assert gone.status_code == 403
    assert world.api("DELETE", f"{base}/{made['uid']}").status_code == 204
    assert world.client.get(path).status_code == 404  # revoked
    assert world.api("DELETE", f"{base}/{made['uid']}").status_code == 404
    assert world.api("GET", base).json()["channels"] == []


def test_a_channel_streams_only_its_own_source(world: World) -> None:
    other = World.create(world.client)  # another team, its own webhook and channel
    ours, theirs = github_hook(world), github_hook(other)
    with served(world.client) as port:
        url = open_channel(other, theirs, port)
        with httpx.Client(timeout=scaled(20)) as http, http.stream("GET", url) as stream:
            assert stream.status_code == 200
            lines = stream.iter_lines()
            found = messages(lines)
            assert next(found)["event"] == "ready"  # smee.io's first message
            push(world, ours, 1)
            push(other, theirs, 2)
            delivered = next(found)
            # revoked, the open stream ends (the channel is checked every RECHECK_S)
            base = f"/webhooks/{theirs['uid']}/channels"
            (channel,) = other.api("GET", base).json()["channels"]
            assert other.api("DELETE", f"{base}/{channel['uid']}").status_code == 204
            started = time.monotonic()
            rest = list(lines)
            assert time.monotonic() - started < scaled(15)
    assert "event" not in delivered  # a `message`, the only kind smee-client forwards
    message = json.loads(delivered["data"])
    assert message["body"]["n"] == 2 and message["x-github-event"] == "push"
    assert not [line for line in rest if line.startswith("data: ")], rest


def test_a_connection_channel_streams_its_deliveries(world: World) -> None:
    connection = connect(world, "github")
    base = f"/provider-connections/{connection['uid']}/channels"
    assert world.api("POST", base, json={}, headers=world.stranger).status_code == 403
    made = world.api("POST", base, json={})
    assert made.status_code == 201, made.text
    assert made.json()["source_uid"] == connection["uid"]
    token = made.json()["url"].rpartition("/")[2]
    signed = signing.github(connection["secret"], "issues", {"action": "opened", "n": 7})
    with served(world.client) as port:
        url = f"http://127.0.0.1:{port}/api/v1/channels/{token}"
        with httpx.Client(timeout=scaled(20)) as http, http.stream("GET", url) as stream:
            found = messages(stream.iter_lines())
            assert next(found)["event"] == "ready"
            deliver(world.client, connection, signed)
            delivered = next(found)
    message = json.loads(delivered["data"])
    assert message["body"] == {"action": "opened", "n": 7}
    assert message["x-github-event"] == "issues"
    assert message["x-github-delivery"] == signed.headers["x-github-delivery"]
    assert "x-hub-signature-256" not in message and "host" not in message
