"""uvicorn's access log on a real `gateway serve` (on stdout): with GATEWAY_ACCESS_LOG=all one line
per request at info level, a url_token path shown as `{token}`; with `on` (the default) accepted
deliveries are counted, not logged one by one, and refusals are logged; none with `off`."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from testbed.procs import free_port
from tests.conftest import make_settings
from tests.ingress.hooks import gateway_env, prepare_world, stop_gateway
from tests.support import scaled

pytestmark = pytest.mark.slow  # starts processes of its own


@pytest.mark.parametrize("access_log", ["all", "on", "off"])
def test_access_log_follows_the_setting(access_log: str, tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    database_url = f"sqlite:///{tmp_path}/gw.db"
    prepared = asyncio.run(prepare_world(make_settings(database_url, None), token))
    env = gateway_env(
        database_url=database_url,
        secret_key=base64.urlsafe_b64encode(b"k" * 32).decode(),
        evaluator="off",
        log_level="info",
        access_log=access_log,
    )
    port, out = free_port(), tmp_path / "stdout.log"
    with out.open("wb") as stdout:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gateway", "serve", "--port", str(port)],
            env=env,
            stdout=stdout,
            stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}/webhooks/w/{prepared.webhook_uid}"
        deadline = time.monotonic() + scaled(20)
        sent = 0
        while sent < 3:
            try:
                answer = httpx.post(
                    url,
                    content=b'{"n": %d}' % sent,
                    headers={
                        "Authorization": f"Bearer {token}",
                        "X-Service-Delivery-Id": f"{sent}",
                    },
                )
            except httpx.TransportError:  # not listening yet
                assert proc.poll() is None and time.monotonic() < deadline, out.read_text()
                time.sleep(0.1)
                continue
            assert answer.status_code == 202, answer.text
            sent += 1
        refused = httpx.post(url, content=b"{}", headers={"Authorization": "Bearer wrong"})
        assert refused.status_code == 401, refused.text
    finally:
        stop_gateway(proc)
    lines = out.read_text().splitlines()
    access = [line for line in lines if "POST /webhooks/w/" in line]
    if access_log == "all":
        assert len([line for line in access if " 202" in line]) == 3, access
        assert len([line for line in access if " 401" in line]) == 1, access
    elif access_log == "on":
        assert [line for line in access if " 202" in line] == [], access
        refused = [line for line in access if " 401" in line]
        assert len(refused) == 1, access  # a refusal is a line of its own
    else:
        assert access == []
        assert any("Application startup complete" in line for line in lines)  # info still on
