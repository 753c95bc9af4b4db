"""The console's pages of a provider connection (SQLite and PostgreSQL): listed on the home
page, its deliveries, one delivery's events and why each automation did or did not start,
and the trigger backtest; another team's connection is refused."""

from __future__ import annotations

import html
import logging
import re

import orjson
import pytest

from tests.connections import signing
from tests.connections.provider_world import (
    automation,
    connect,
    deliver,
    evaluated,
    set_repositories,
    trigger,
)
from tests.connections.test_provider_triggers import LINEAR_SECRET
from tests.console.test_console_pages import csrf_of, login
from tests.providers.conftest import fixture
from tests.support import World

PAYLOAD = {
    "action": "labeled",
    "label": {"name": "bug"},
    "issue": {"labels": [{"name": "bug"}], "user": {"login": "ana"}, "body": "<b>x</b>"},
    "repository": {"full_name": "acme/api"},
}


def test_a_connection_in_the_console(world: World) -> None:
    client = world.client
    set_repositories(client, world.factory_uid, "acme/api")
    bugs = automation(
        world, world.factory_uid, "bugs", trigger("github", "issue_labeled", labels=["bug"])
    )
    agent = automation(
        world, world.factory_uid, "agent", trigger("github", "issue_labeled", labels=["agent"])
    )
    github = connect(world, "github", name="Acme <GitHub>")
    delivery_id = deliver(client, github, signing.github(github["secret"], "issues", PAYLOAD))
    evaluated(world, github, delivery_id)
    login(client, world.user_key)

    home = client.get("/console/").text
    assert f"/console/p/{github['uid']}" in home and "Acme &lt;GitHub&gt;" in home
    base = f"/console/p/{github['uid']}"
    listing = client.get(base).text
    assert delivery_id in listing and "matched" in listing
    assert client.get(f"{base}/rows").text.count(delivery_id) >= 1
    page = client.get(f"{base}/d/{delivery_id}")
    assert page.status_code == 200
    text = html.unescape(page.text)
    assert "github / issue_labeled" in text and '"labels": [' in text
    assert bugs in text and agent in text
    assert "labels: the event's" in text  # why `agent` did not start
    assert "<b>x</b>" not in page.text  # the payload is escaped

    token = csrf_of(client, base)
    wanted = trigger("github", "issue_labeled", labels=["agent"])
    tried = {"filter": orjson.dumps(wanted).decode()}
    answer = client.post(f"{base}/filter-test", data=tried | {"csrf": token, "last": "10"})
    assert answer.status_code == 200 and "0 of 1 deliveries match the trigger" in answer.text
    wrong = {"filter": '{"provider": "slack", "event": "app_mention"}', "csrf": token}
    refused = client.post(f"{base}/filter-test", data=wrong)
    assert refused.status_code == 400 and "trigger.provider" in refused.text

    # the Replay form: the same form sent twice replays once
    fields = dict(re.findall(r'name="(csrf|nonce)" value="([^"]+)"', page.text))
    first = client.post(f"{base}/d/{delivery_id}/replay", data=fields, follow_redirects=False)
    again = client.post(f"{base}/d/{delivery_id}/replay", data=fields, follow_redirects=False)
    assert first.status_code == again.status_code == 303  # one form, one replay
    assert first.headers["location"] == again.headers["location"]
    copy_id = first.headers["location"].rsplit("/d/", 1)[1]
    assert evaluated(world, github, copy_id)["replay_of"] == delivery_id
    assert delivery_id in client.get(first.headers["location"]).text  # "Replay of"

    client.cookies.clear()
    login(client, world.stranger_key)
    assert client.get(base).status_code == 403
    assert client.get(f"{base}/d/{delivery_id}").status_code == 403
    token = csrf_of(client, "/console/")
    replayed = client.post(f"{base}/d/{delivery_id}/replay", data={"csrf": token, "nonce": "n"})
    assert replayed.status_code == 403


def test_no_automations_names_why(world: World, caplog: pytest.LogCaptureFixture) -> None:
    """The first delivery from a repository no factory lists: the trace, the console and the
    evaluator's log say so; an event nothing listens to says that instead."""
    client = world.client
    set_repositories(client, world.factory_uid, "acme/other")
    automation(world, world.factory_uid, "bugs", trigger("github", "issue_labeled"))
    github = connect(world, "github")
    hello = {**PAYLOAD, "repository": {"full_name": "Codertocat/Hello-World"}}
    with caplog.at_level(logging.INFO, logger="gateway.automations"):
        delivery_id = deliver(client, github, signing.github(github["secret"], "issues", hello))
        trace = evaluated(world, github, delivery_id)["trace"]
    assert trace["outcome"] == "no_automations"
    assert trace["reason"].startswith(
        "repository Codertocat/Hello-World is in no factory's repositories"
    ), trace
    logged = [r.getMessage() for r in caplog.records if delivery_id in r.getMessage()]
    assert logged and "repository Codertocat/Hello-World is in no factory's" in logged[0]
    login(client, world.user_key)
    page = html.unescape(client.get(f"/console/p/{github['uid']}/d/{delivery_id}").text)
    assert "repository Codertocat/Hello-World is in no factory's repositories" in page

    opened = {**PAYLOAD, "action": "opened"}
    other = deliver(client, github, signing.github(github["secret"], "issues", opened))
    nothing = evaluated(world, github, other)["trace"]
    assert nothing["outcome"] == "no_automations"
    assert nothing["reason"] == (
        "no enabled automation of the team has a trigger on github issue_created"
    )


def test_no_automations_of_one_provider_is_not_another_providers(world: World) -> None:
    """Two connections of one team whose deliveries carry the same event name (GitHub's and
    Linear's issue_created), both reaching no automation: each trace names its own provider
    and its own reason (the traces the evaluator reuses are kept per provider)."""
    client = world.client
    set_repositories(client, world.factory_uid, "acme/other")
    automation(world, world.factory_uid, "new", trigger("github", "issue_created"))
    github = connect(world, "github")
    linear = connect(world, "linear", secret=LINEAR_SECRET)
    hello = {**PAYLOAD, "action": "opened", "repository": {"full_name": "Codertocat/Hello-World"}}
    first = deliver(client, github, signing.github(github["secret"], "issues", hello))
    assert evaluated(world, github, first)["trace"]["reason"].startswith("repository Codertocat")
    created = fixture("linear", "issue_create")
    created.pop("webhookTimestamp", None)
    second = deliver(client, linear, signing.linear(LINEAR_SECRET, created))
    trace = evaluated(world, linear, second)["trace"]
    assert trace["outcome"] == "no_automations"
    assert [e["provider"] for e in trace["events"]] == ["linear"], trace
    assert trace["reason"] == (
        "no enabled automation of the team has a trigger on linear issue_created"
    ), trace
