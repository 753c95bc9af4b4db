"""The delivery console in a real headless Chromium, against `gateway serve` as an OS process
(SQLite, embedded backend, inline evaluator): log in with an API key, watch deliveries arrive
live, open one and read its trace, replay it, run a filter backtest, log out.

Screenshots go to the test's temporary directory; with GATEWAY_CONSOLE_SCREENSHOTS=<dir> (as
docs/console.md says) they are written there instead, which is how the pictures in docs/console/
were made. GATEWAY_TEST_PORT_BASE=<n> puts the server and the browser on ports n and n+1
(default: free ports)."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from testbed.procs import free_port
from tests.console.axe import audit_over_cdp
from tests.console.cdp import Browser, find_chromium
from tests.ingress.hooks import gateway_env, serve_gateway, stop_gateway
from tests.support import eventually
from tests.test_cli import admin

pytestmark = pytest.mark.slow  # starts processes of its own


def _port(offset: int) -> int:
    base = os.environ.get("GATEWAY_TEST_PORT_BASE")
    return int(base) + offset if base else free_port()


class Site:
    """A served gateway with a demo factory, one token webhook and an automation that wants
    `action: opened`."""

    def __init__(self, url: str, demo: dict[str, Any]) -> None:
        self.url = url
        self.key = demo["user_api_key"]
        self.factory = demo["factory_uid"]
        self.api = httpx.Client(
            base_url=f"{url}/api/v1", headers={"Authorization": f"Bearer {self.key}"}, timeout=10
        )
        hook = self.api.post(f"/factory/{self.factory}/webhooks", json={"name": "issues"})
        assert hook.status_code == 201, hook.text
        self.hook, self.secret = hook.json()["uid"], hook.json()["secret"]
        trigger = {
            "provider": "webhook",
            "event": "received",
            "filter": {"webhook_ids": [self.hook], "payload": {"action": ["opened"]}},
        }
        body = {"name": "triage", "prompt": "Triage it.", "triggers": [trigger]}
        made = self.api.post(f"/factory/{self.factory}/automations", json=body)
        assert made.status_code == 201, made.text
        self.automation = made.json()["uid"]

    def send(self, payload: dict[str, Any]) -> str:
        answer = httpx.post(
            f"{self.url}/webhooks/w/{self.hook}",
            json=payload,
            headers={"Authorization": f"Bearer {self.secret}"},
        )
        assert answer.status_code == 202, answer.text
        delivery_id: str = answer.json()["delivery_id"]
        return delivery_id

    def delivery(self, delivery_id: str) -> dict[str, Any]:
        path = f"/factory/{self.factory}/webhooks/{self.hook}/deliveries/{delivery_id}"
        found: dict[str, Any] = self.api.get(path).json()
        return found


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    demo = admin(tmp_path, "demo")  # the CLI helpers' store: tmp_path/cli.db
    env = gateway_env(
        database_url=f"sqlite:///{tmp_path}/cli.db",
        secret_key=base64.urlsafe_b64encode(b"c" * 32).decode(),
        log_level="warning",
    )
    port = _port(0)
    proc = serve_gateway(env, port, tmp_path / "gateway.log")
    try:
        served = Site(f"http://127.0.0.1:{port}", demo)
        try:
            yield served
        finally:
            served.api.close()
    finally:
        stop_gateway(proc)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    chromium = Browser(find_chromium(), _port(1), tmp_path / "profile")
    try:
        yield chromium
    finally:
        chromium.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    wanted = os.environ.get("GATEWAY_CONSOLE_SCREENSHOTS")
    folder = Path(wanted) if wanted else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_log_in_open_a_delivery_replay_it_and_backtest_a_filter(
    site: Site, browser: Browser, shots: Path
) -> None:
    opened = site.send({"action": "opened", "issue": {"title": "Crash on start"}})
    closed = site.send({"action": "closed", "issue": {"title": "Typo"}})
    for delivery_id in (opened, closed):
        eventually(lambda d=delivery_id: site.delivery(d).get("evaluation") == "evaluated")

    browser.goto(f"{site.url}/console/")
    assert browser.evaluate("location.pathname") == "/console/login"  # not logged in yet
    browser.screenshot(shots / "login.png")
    audit_over_cdp(browser, "the login page")
    browser.evaluate(
        f"document.querySelector('input[name=api_key]').value = {json.dumps(site.key)}"
    )
    browser.submit("form.login button")
    assert "Factories" in browser.text()
    (cookie,) = [c for c in browser.cookies() if c["name"] == "gateway_console"]
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert site.key not in cookie["value"]  # sealed, not the key itself

    browser.goto(f"{site.url}/console/f/{site.factory}")
    audit_over_cdp(browser, "a factory's page")
    browser.submit("ul.webhooks a")  # the one webhook: a link, "submitted" by clicking it
    assert browser.evaluate("location.pathname").endswith(f"/w/{site.hook}")
    rows = browser.text()
    assert opened in rows and closed in rows and "matched" in rows and "no_match" in rows

    # live: a delivery sent now shows up without a reload
    browser.evaluate("window.__same_page = true")
    later = site.send({"action": "opened", "issue": {"title": "Slow"}})
    browser.wait_for(f"document.getElementById('deliveries').innerText.includes('{later}')")
    assert browser.evaluate("window.__same_page") is True
    browser.screenshot(shots / "deliveries.png")
    audit_over_cdp(browser, "a webhook's deliveries")

    browser.goto(f"{site.url}/console/f/{site.factory}/w/{site.hook}/d/{closed}")
    page = browser.text()
    assert "no_match" in page and '$.action: "closed" not in ["opened"]' in page
    assert '"Typo"' in page  # the payload
    browser.screenshot(shots / "delivery.png")
    audit_over_cdp(browser, "a webhook's delivery")

    browser.submit("form.replay button")  # asks first (confirm), accepted here
    replay_page = browser.text()
    assert f"Replay of\n{closed}" in replay_page or f"Replay of\t{closed}" in replay_page
    replay_id = browser.evaluate("location.pathname.split('/').pop()")
    audit_over_cdp(browser, "a replay's page")
    assert replay_id != closed and site.delivery(replay_id)["replay_of"] == closed
    # a backtest reads the log, which holds the replay once it is evaluated
    eventually(lambda: site.delivery(replay_id).get("evaluation") == "evaluated")

    browser.goto(f"{site.url}/console/f/{site.factory}/w/{site.hook}")
    browser.evaluate(
        "document.querySelector('form.backtest textarea').value = '{\"action\": [\"closed\"]}'"
    )
    browser.submit("form.backtest button")
    result = browser.text()
    assert "2 of 4 deliveries match" in result  # closed and its replay
    assert '$.action: "opened" not in ["closed"]' in result
    browser.screenshot(shots / "backtest.png")
    audit_over_cdp(browser, "a filter backtest's answer")

    browser.submit("form.logout button")
    assert browser.evaluate("location.pathname") == "/console/login"
    browser.goto(f"{site.url}/console/f/{site.factory}")
    assert browser.evaluate("location.pathname") == "/console/login"
