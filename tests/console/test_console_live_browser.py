"""The console's path of one piece of work, read in a real headless Chromium (Playwright for
Python driving the OS's Chromium; no browser download) against `gateway serve` as an OS process,
on both shapes: embedded on SQLite, and Redis ingress on PostgreSQL.

Logged in with an API key, the browser opens a GitHub connection's deliveries; a real GitHub
payload (@octokit/webhooks-examples) sent through the connection appears without a reload; its
page names the automation that matched and shows its run QUEUED, then, as a runner drives the
run through the protocol, SUCCEEDED, still without a reload; the run's page shows its status
message, and the work item's page links back to the delivery.

Screenshots go to the test's temporary directory; with GATEWAY_CONSOLE_SCREENSHOTS=<dir> (as
scripts/console-screenshots sets it, embedded shape only) they are written there instead."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright import sync_api as playwright_api
from sqlalchemy import update

from gateway.services import build_services
from gateway.store import tables as t
from testbed.procs import free_port
from tests.conftest import make_settings
from tests.connections import signing
from tests.console.cdp import find_chromium
from tests.ingress.hooks import gateway_env, serve_gateway, stop_gateway
from tests.providers.conftest import GithubExamples
from tests.support import CLI_SECRET_KEY as SECRET_KEY
from tests.test_cli import gateway

pytestmark = pytest.mark.slow  # starts a server and a browser
REPOSITORY = "Codertocat/Hello-World"
WAIT_MS = 30_000


@dataclass
class Site:
    url: str
    key: str
    agent_key: str
    factory: str
    automation: str
    connection: dict[str, Any]
    api: httpx.Client

    def send(self, event: str, payload: Any) -> str:
        signed = signing.github(self.connection["secret"], event, payload)
        path = self.connection["ingress_url"].split("/webhooks/", 1)[1]
        answer = httpx.post(f"{self.url}/webhooks/{path}", content=signed.body,
                            headers=signed.headers)  # fmt: skip
        assert answer.status_code == 202, answer.text
        delivery_id: str = answer.json()["delivery_id"]
        return delivery_id


def _set_repositories(database_url: str, factory_uid: str) -> None:
    owner, name = REPOSITORY.split("/")

    async def run() -> None:
        services = build_services(make_settings(database_url))
        try:
            async with services.database.transaction() as conn:
                f = t.factories
                stored = [{"owner": owner, "name": name}]
                await conn.execute(
                    update(f).where(f.c.uid == factory_uid).values(repositories=stored)
                )
        finally:
            await services.close()

    asyncio.run(run())


@pytest.fixture(params=["embedded+sqlite", "redis+postgresql"])
def site(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    own_store: Callable[[str], str],
) -> Iterator[Site]:
    redis = request.param.startswith("redis")
    database_url = own_store("postgresql" if redis else "sqlite")
    values = {"database_url": database_url, "secret_key": SECRET_KEY, "log_level": "warning"}
    if redis:
        prefix = request.getfixturevalue("redis_prefix")
        values |= {"redis_url": request.getfixturevalue("redis_url"), "redis_prefix": prefix}
    else:
        values |= {"evaluator": "inline"}
    demo = _demo(tmp_path, database_url)
    _set_repositories(database_url, demo["factory_uid"])
    port = free_port()
    proc = serve_gateway(gateway_env(**values), port, tmp_path / "gateway.log")
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {demo['user_api_key']}"}
    api = httpx.Client(base_url=f"{url}/api/v1", headers=headers, timeout=10)
    try:
        trigger = {"provider": "github", "event": "issue_created"}
        body = {"name": "triage", "prompt": "Triage the issue.", "triggers": [trigger]}
        made = api.post(f"/factory/{demo['factory_uid']}/automations", json=body)
        assert made.status_code == 201, made.text
        connection = api.post("/provider-connections", json={"provider": "github"})
        assert connection.status_code == 201, connection.text
        yield Site(url, demo["user_api_key"], demo["agent_api_key"], demo["factory_uid"],
                   made.json()["uid"], connection.json(), api)  # fmt: skip
    finally:
        api.close()
        stop_gateway(proc)


def _demo(tmp_path: Path, database_url: str) -> dict[str, Any]:
    import json

    done = gateway(tmp_path, "admin", "demo", env={"GATEWAY_DATABASE_URL": database_url})
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    with playwright_api.sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=find_chromium(), headless=True, args=["--no-sandbox"]
        )
        try:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.set_default_timeout(WAIT_MS)
            yield context.new_page()
        finally:
            browser.close()


@pytest.fixture
def shots(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    wanted = os.environ.get("GATEWAY_CONSOLE_SCREENSHOTS")
    embedded = "embedded" in request.node.name
    folder = Path(wanted) if wanted and embedded else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Runner:
    """The demo foreman's runner, speaking the runner protocol."""

    def __init__(self, site: Site) -> None:
        headers = {"Authorization": f"Bearer {site.agent_key}"}
        self.api = httpx.Client(base_url=f"{site.url}/api/v1", headers=headers, timeout=10)
        made = self.api.post("/runner/register", json={"name": "browser-test"})
        assert made.status_code == 201, made.text
        self.uid = made.json()["runner_uid"]

    def call(self, path: str, **body: Any) -> Any:
        answer = self.api.post(path, json={"runner_uid": self.uid, **body})
        assert answer.status_code == 200, answer.text
        return answer.json()

    def claim(self, run_id: str) -> None:
        for _ in range(100):
            runs = self.call("/runner/claim", max_runs=1, wait_s=0)["runs"]
            if runs:
                assert runs[0]["run_id"] == run_id
                return
        pytest.fail(f"run {run_id} never claimed")


@pytest.fixture
def runner(site: Site) -> Iterator[Runner]:
    made = Runner(site)
    try:
        yield made
    finally:
        made.api.close()


def test_a_github_issue_read_live_from_delivery_to_run_and_work_item(
    site: Site, runner: Runner, page: Any, shots: Path, github_examples: GithubExamples
) -> None:
    expect = playwright_api.expect
    page.goto(f"{site.url}/console/")
    expect(page).to_have_url(f"{site.url}/console/login")
    page.screenshot(path=shots / "login.png")
    page.get_by_label("API key").fill(site.key)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Factories")).to_be_visible()

    page.get_by_role("link", name=site.connection["name"]).click()
    page.evaluate("window.sameDocument = true")  # gone if anything reloads the page
    opened = next(p for p in github_examples["issues"] if p["action"] == "opened")
    delivery_id = site.send("issues", opened)
    row = page.locator("#deliveries tr", has_text=delivery_id)
    expect(row).to_contain_text("matched")  # arrived and evaluated, without a reload
    assert page.evaluate("window.sameDocument") is True
    page.screenshot(path=shots / "deliveries.png")

    row.get_by_role("link", name=delivery_id).click()
    page.evaluate("window.sameDocument = true")
    considered = page.locator("table.considered")
    expect(considered.get_by_title(site.automation)).to_have_text("triage")
    runs = page.locator("table.runs")
    expect(runs).to_contain_text("QUEUED")
    run_id = runs.locator("a[href^='/console/runs/']").first.inner_text()
    page.screenshot(path=shots / "delivery.png")

    runner.claim(run_id)
    held = f"/runner/runs/{run_id}"
    runner.call(f"{held}/progress", state="INPROGRESS", status_message="reading the issue")
    expect(runs).to_contain_text("INPROGRESS")
    runner.call(f"{held}/messages", messages=[{"role": "agent", "text": "Labelled it: bug."}])
    runner.call(f"{held}/finish", outcome="SUCCEEDED", status_message="triaged: bug")
    expect(runs).to_contain_text("SUCCEEDED")  # on the same page, no reload
    expect(runs).to_contain_text("triaged: bug")
    assert page.evaluate("window.sameDocument") is True

    runs.get_by_role("link", name=run_id).click()
    expect(page.locator("#run-state")).to_contain_text("SUCCEEDED")
    expect(page.locator("#run-status")).to_contain_text("triaged: bug")
    expect(page.locator("ol.transcript")).to_contain_text("Labelled it: bug.")
    page.screenshot(path=shots / "run.png", full_page=True)

    page.get_by_role("link", name="All runs").click()
    expect(page.locator("table.runs")).to_contain_text("triage")
    page.screenshot(path=shots / "runs.png")

    page.go_back()
    page.locator("#run-work-item a").click()
    expect(page.locator("#work-item-stage")).to_contain_text("DONE")
    expect(page.locator("main")).to_contain_text(f"{REPOSITORY}#1")
    delivery_link = page.get_by_role("link", name="its first delivery")
    expect(delivery_link).to_have_attribute(
        "href", f"/console/p/{site.connection['uid']}/d/{delivery_id}"
    )
    page.screenshot(path=shots / "work-item.png")

    page.get_by_role("link", name="The board").click()
    expect(page.locator("section.column", has_text="Done")).to_contain_text(f"{REPOSITORY}#1")
    page.screenshot(path=shots / "work-items.png", full_page=True)

    page.goto(f"{site.url}/console/f/{site.factory}/activity")
    expect(page.locator("ul.legend").first).to_contain_text("matched: 1")
    expect(page.locator("ul.legend").nth(1)).to_contain_text("SUCCEEDED: 1")
    page.screenshot(path=shots / "activity.png", full_page=True)

    # Replay: the copy's page shows its outcome and its new run as they come, without a reload
    page.goto(f"{site.url}/console/p/{site.connection['uid']}/d/{delivery_id}")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Replay").click()
    expect(page.locator("main dl")).to_contain_text(delivery_id)  # "Replay of", linked
    page.evaluate("window.sameDocument = true")
    expect(page.locator("#outcome")).to_have_text("matched")
    expect(page.locator("table.runs")).to_contain_text("QUEUED")
    assert page.evaluate("window.sameDocument") is True

    # keyboard: the skip link comes first and shows where the focus is
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent")
    assert focused == "Skip to the content"
