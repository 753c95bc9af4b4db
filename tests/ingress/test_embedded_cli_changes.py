"""Embedded backend: changes made by another process (`gateway admin set-secret`,
`gateway apply`) reach a running `gateway serve` without a restart."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.ingress.hooks import free_port
from tests.unit.test_cli import admin, gateway

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path: Path) -> Iterator[httpx.Client]:
    """`gateway serve` on the same SQLite file and key the CLI helpers use."""
    import base64

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    env |= {
        "GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/cli.db",
        "GATEWAY_SECRET_KEY": base64.urlsafe_b64encode(b"c" * 32).decode(),
        "GATEWAY_LOG_LEVEL": "warning",
    }
    admin(tmp_path, "create-team", "--name", "warm-up")  # migrate before the server starts
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                client.get("/api/v1/openapi.json")
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield client
    finally:
        client.close()
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)


def eventually(probe: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        assert time.monotonic() < deadline, "the running server did not see the change"
        time.sleep(0.1)


def github_post(client: httpx.Client, uid: str, secret: str, n: int) -> int:
    body = b'{"n": %d}' % n
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-Hub-Signature-256": signature, "X-GitHub-Delivery": f"gh-{n}-{time.time()}"}
    return client.post(f"/webhooks/w/{uid}", content=body, headers=headers).status_code


def test_set_secret_from_the_cli_reaches_the_server(tmp_path: Path, server: httpx.Client) -> None:
    demo = admin(tmp_path, "demo")
    made = server.post(
        f"/api/v1/factory/{demo['factory_uid']}/webhooks",
        headers={"Authorization": f"Bearer {demo['user_api_key']}"},
        json={
            "name": "gh",
            "auth_mode": "signature",
            "signature_scheme": "github",
            "secret_name": "demo-secret",
        },
    )
    assert made.status_code == 201, made.text
    uid = made.json()["uid"]
    assert github_post(server, uid, "demo-value", 1) == 202

    admin(
        tmp_path,
        "set-secret",
        "--team",
        demo["team_uid"],
        "--name",
        "demo-secret",
        "--value",
        "changed",
    )
    eventually(lambda: github_post(server, uid, "changed", 2) == 202)
    assert github_post(server, uid, "demo-value", 3) == 401


def test_apply_from_the_cli_reaches_the_server(tmp_path: Path, server: httpx.Client) -> None:
    demo = admin(tmp_path, "demo")
    hook_file = tmp_path / "defs" / "webhooks" / "ci.yaml"
    hook_file.parent.mkdir(parents=True)
    hook_file.write_text("authMode: token\n")
    applied = json.loads(
        gateway(tmp_path, "apply", str(tmp_path / "defs"), "--factory", demo["factory_uid"]).stdout
    )
    (hook,) = applied["webhooks"]
    auth = {"Authorization": f"Bearer {hook['secret']}"}
    assert server.post(f"/webhooks/w/{hook['uid']}", content=b"{}", headers=auth).status_code == 202

    hook_file.write_text("authMode: token\nenabled: false\n")
    gateway(tmp_path, "apply", str(tmp_path / "defs"), "--factory", demo["factory_uid"])
    eventually(
        lambda: (
            server.post(f"/webhooks/w/{hook['uid']}", content=b"{}", headers=auth).status_code
            == 404
        )
    )
