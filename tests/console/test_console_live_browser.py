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
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright import sync_api as playwright_api
from sqlalchemy import update

from gateway.foundation.services import build_services
from gateway.foundation.store import tables as t
from testbed.procs import free_port
from tests.conftest import make_settings
from tests.connections import signing
from tests.console.axe import audit, keyboard_walk
from tests.console.cdp import find_chromium
from tests.ingress.hooks import gateway_env, serve_gateway, stop_gateway
from tests.providers.conftest import GithubExamples
from tests.replies.github_api import GitHubApi
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
    github: GitHubApi,
) -> Iterator[Site]:
    redis = request.param.startswith("redis")
    database_url = own_store("postgresql" if redis else "sqlite")
    values = {"database_url": database_url, "secret_key": SECRET_KEY, "log_level": "warning",
              "outbound_allow_private": "1", "reply_retry_s": "0.2"}  # fmt: skip
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
        replying = {"provider": "github", "api_token": "ghp_valid", "api_base_url": github.url}
        connection = api.post("/provider-connections", json=replying)
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
            # bypass_csp: the audit's script is injected inline (tests/console/axe.py); the
            # console's own scripts keep to its policy in test_console_browser.py
            context = browser.new_context(viewport={"width": 1200, "height": 900}, bypass_csp=True)
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


def _log_in_by_keyboard(page: Any, site: Site) -> None:
    """The key field has the focus when the login page opens; Enter sends the form."""
    expect = playwright_api.expect
    expect(page.get_by_label("API key")).to_be_focused()
    page.keyboard.type(site.key)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Factories")).to_be_visible()


def _read_the_run_and_its_replies_live(
    page: Any, run_page: Any, runner: Runner, run_id: str, github: GitHubApi
) -> None:
    """The delivery's page (`page`) and the run's (`run_page`) follow the run as a runner
    drives it, and the run's page its reply on the issue: posted when the run starts, updated
    with the outcome when it ends. Neither page reloads."""
    expect = playwright_api.expect
    for each in (page, run_page):
        each.evaluate("window.sameDocument = true")  # gone if anything reloads the page
    runs, replies = page.locator("table.runs"), run_page.locator("table.replies")
    expect(run_page.locator("#live")).to_contain_text("None yet.")  # queued: nothing sent
    # the keyboard focus inside a part that refreshes stays on its element
    runs.get_by_role("link", name=run_id).focus()
    run_page.locator("#live").get_by_role("link", name="triage").focus()

    runner.claim(run_id)
    expect(replies).to_contain_text("posted when the run started")
    expect(replies).to_contain_text("delivered")
    comment = re.compile(rf"^https://github\.com/{REPOSITORY}/issues/1#issuecomment-\d+$")
    expect(replies.get_by_role("link")).to_have_attribute("href", comment)
    assert len(github.comments) == 1

    held = f"/runner/runs/{run_id}"
    runner.call(f"{held}/progress", state="INPROGRESS", status_message="reading the issue")
    expect(runs).to_contain_text("INPROGRESS")
    expect(run_page.locator("#run-status")).to_contain_text("reading the issue")
    runner.call(f"{held}/messages", messages=[{"role": "agent", "text": "Labelled it: bug."}])
    expect(run_page.locator("ol.transcript")).to_contain_text("Labelled it: bug.")
    runner.call(f"{held}/finish", outcome="SUCCEEDED", status_message="triaged: bug")
    expect(runs).to_contain_text("SUCCEEDED")
    expect(runs).to_contain_text("triaged: bug")
    expect(run_page.locator("#run-state")).to_contain_text("SUCCEEDED")
    expect(replies).to_contain_text("updated when it SUCCEEDED")  # the same comment, edited
    (body,) = [c["body"] for c in github.comments.values()]
    assert "triaged: bug" in body
    for each in (page, run_page):
        assert each.evaluate("window.sameDocument") is True
    # what changed is told to screen readers, in a few words
    expect(page.locator("#announce")).to_contain_text("Run of triage: SUCCEEDED")
    told = "Reply: posted when the run started; updated when it SUCCEEDED"
    expect(run_page.locator("#announce")).to_contain_text(told)
    expect(runs.get_by_role("link", name=run_id)).to_be_focused()
    expect(run_page.locator("#live").get_by_role("link", name="triage")).to_be_focused()


def test_a_github_issue_read_live_from_delivery_to_run_and_work_item(
    site: Site,
    runner: Runner,
    page: Any,
    shots: Path,
    github_examples: GithubExamples,
    github: GitHubApi,
) -> None:
    expect = playwright_api.expect
    page.goto(f"{site.url}/console/")
    expect(page).to_have_url(f"{site.url}/console/login")
    page.screenshot(path=shots / "login.png")
    audit(page, "the login page")
    _log_in_by_keyboard(page, site)
    audit(page, "the factories")

    page.get_by_role("link", name=site.connection["name"]).click()
    page.evaluate("window.sameDocument = true")  # gone if anything reloads the page
    opened = next(p for p in github_examples["issues"] if p["action"] == "opened")
    delivery_id = site.send("issues", opened)
    row = page.locator("#deliveries tr", has_text=delivery_id)
    expect(row).to_contain_text("matched")  # arrived and evaluated, without a reload
    assert page.evaluate("window.sameDocument") is True
    page.screenshot(path=shots / "deliveries.png")
    audit(page, "a connection's deliveries")

    row.get_by_role("link", name=delivery_id).click()
    considered = page.locator("table.considered")
    expect(considered.get_by_title(site.automation)).to_have_text("triage")
    runs = page.locator("table.runs")
    expect(runs).to_contain_text("QUEUED")
    run_id = runs.locator("a[href^='/console/runs/']").first.inner_text()
    page.screenshot(path=shots / "delivery.png")
    audit(page, "a delivery and its queued run")

    run_page = page.context.new_page()
    run_page.goto(f"{site.url}/console/runs/{run_id}")
    _read_the_run_and_its_replies_live(page, run_page, runner, run_id, github)
    run_page.screenshot(path=shots / "run.png", full_page=True)
    audit(run_page, "a run's page with its reply")
    run_page.close()

    runs.get_by_role("link", name=run_id).click()
    expect(page.locator("#run-state")).to_contain_text("SUCCEEDED")
    page.get_by_role("link", name="All runs").click()
    expect(page.locator("table.runs")).to_contain_text("triage")
    page.screenshot(path=shots / "runs.png")
    audit(page, "the runs")

    page.go_back()
    page.locator("#run-work-item a").click()
    expect(page.locator("#work-item-stage")).to_contain_text("DONE")
    expect(page.locator("main")).to_contain_text(f"{REPOSITORY}#1")
    delivery_link = page.get_by_role("link", name="its first delivery")
    expect(delivery_link).to_have_attribute(
        "href", f"/console/p/{site.connection['uid']}/d/{delivery_id}"
    )
    page.screenshot(path=shots / "work-item.png")
    audit(page, "a work item")

    page.get_by_role("link", name="The board").click()
    expect(page.locator("section.column", has_text="Done")).to_contain_text(f"{REPOSITORY}#1")
    page.screenshot(path=shots / "work-items.png", full_page=True)
    audit(page, "the work items board")

    page.goto(f"{site.url}/console/f/{site.factory}/activity")
    expect(page.locator("ul.legend").first).to_contain_text("matched: 1")
    expect(page.locator("ul.legend").nth(1)).to_contain_text("SUCCEEDED: 1")
    page.screenshot(path=shots / "activity.png", full_page=True)
    audit(page, "a factory's activity")

    page.goto(f"{site.url}/console/f/{site.factory}")
    expect(page.locator("main")).to_contain_text("triage")
    audit(page, "a factory's page")

    _backtest_a_trigger(page, site)
    page.goto(f"{site.url}/console/runs/run_0000000000000000000000000000")
    audit(page, "a problem page (a run that does not exist)")

    # Replay, by keyboard: the copy's page shows its outcome and its new run as they come
    page.goto(f"{site.url}/console/p/{site.connection['uid']}/d/{delivery_id}")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Replay").focus()
    page.keyboard.press("Enter")
    expect(page.locator("main dl")).to_contain_text(delivery_id)  # "Replay of", linked
    page.evaluate("window.sameDocument = true")
    expect(page.locator("#outcome")).to_have_text("matched")
    expect(page.locator("table.runs")).to_contain_text("QUEUED")
    assert page.evaluate("window.sameDocument") is True
    audit(page, "a replay's page")

    _walk_by_keyboard(page, site, delivery_id, run_id)


def _backtest_a_trigger(page: Any, site: Site) -> None:
    expect = playwright_api.expect
    page.goto(f"{site.url}/console/p/{site.connection['uid']}")
    page.get_by_label("Trigger (JSON, as an automation writes it)").fill(
        '{"provider": "github", "event": "issue_created"}'
    )
    page.get_by_role("button", name="Test").click()
    expect(page.locator("p.summary")).to_contain_text("1 of 1 deliveries match")
    audit(page, "a trigger backtest's answer")


def _walk_by_keyboard(page: Any, site: Site, delivery_id: str, run_id: str) -> None:
    """Tab through the main pages: the skip link first, then every link, button and field in
    the order of the page, each with a visible focus ring; the skip link moves the focus to
    the content."""
    expect = playwright_api.expect
    connection = f"{site.url}/console/p/{site.connection['uid']}"
    pages = {
        "the factories": f"{site.url}/console/",
        "a connection's deliveries": connection,
        "a delivery": f"{connection}/d/{delivery_id}",
        "a run": f"{site.url}/console/runs/{run_id}",
        "the runs": f"{site.url}/console/runs",
        "the work items board": f"{site.url}/console/f/{site.factory}/work-items",
        "a factory's activity": f"{site.url}/console/f/{site.factory}/activity",
    }
    for where, url in pages.items():
        page.goto(url)
        visited = keyboard_walk(page, where)
        assert visited[0] == 'a "Skip to the content"', visited
    page.goto(pages["a run"])
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()
    page.keyboard.press("Tab")  # from the content on: its first link
    assert page.evaluate("document.activeElement.textContent") == "All runs"
