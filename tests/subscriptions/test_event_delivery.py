"""Event subscriptions deliver (docs/events.md): a subscriber that verifies every message with
the official `standardwebhooks` verifiers (the Python package and the npm one) receives a run's
life, run.created ... run.succeeded; a message it answered 500 comes again with the same
webhook-id; the attempts are readable, and a failed message is sent again on request."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks import Webhook

from gateway.foundation.store.types import utcnow
from tests.conftest import make_settings
from tests.platform.runs.runs_support import advance, new_run
from tests.signatures.vendor_oracle import ask
from tests.subscriptions.receiver import Received, receiving
from tests.support import GatewayClient, World, eventually, scaled

RUN_LIFE = ["run.created", "run.state_changed", "run.state_changed", "run.state_changed",
            "run.succeeded"]  # fmt: skip


@pytest.fixture(scope="module")
def events_client(
    request: pytest.FixtureRequest,
    store_kind: str,
    sqlite_template: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[GatewayClient]:
    """A gateway whose outbound calls may reach loopback (the subscriber runs there)."""
    if store_kind == "sqlite":
        store = tmp_path_factory.mktemp("events") / "gateway.db"
        shutil.copyfile(sqlite_template, store)
        url = f"sqlite:///{store}"
    else:
        url = request.getfixturevalue("postgres_url")
    with GatewayClient.running(make_settings(url, outbound_allow_private="1")) as client:
        yield client


@pytest.fixture
def world(events_client: GatewayClient) -> World:
    return World.create(events_client)


def verified(secret: str, received: Received) -> dict[str, Any]:
    """The body, after the official verifier accepted its signature (it raises otherwise)."""
    body: dict[str, Any] = Webhook(secret).verify(received.body, received.headers)
    return body


def subscribe(world: World, url: str, events: list[str]) -> dict[str, Any]:
    made = world.api("POST", "/event-subscriptions", json={"url": url, "events": events})
    assert made.status_code == 201, made.text
    return dict(made.json())


def test_a_subscriber_receives_a_runs_life_verified(world: World) -> None:
    with receiving() as subscriber:
        sub = subscribe(world, subscriber.url, ["run.*"])
        run = new_run(world)
        advance(world, run["run_id"], "claim", "start", "succeed")
        got = subscriber.wait_for(len(RUN_LIFE), scaled(30))
    bodies = [verified(sub["secret"], received) for received in got]
    assert sorted(b["type"] for b in bodies) == sorted(RUN_LIFE)
    assert all(b["data"]["run_id"] == run["run_id"] for b in bodies)
    states = [b["data"]["state"] for b in bodies if b["type"] == "run.state_changed"]
    assert sorted(states) == ["CLAIMED", "INPROGRESS", "SUCCEEDED"]
    assert len({r.headers["webhook-id"] for r in got}) == len(RUN_LIFE)
    # the npm package verifies them too, and reads the same bodies
    answers = ask(
        [
            {"op": "standardwebhooks_verify", "secret": sub["secret"],
             "body": r.body.decode(), "headers": r.headers}
            for r in got
        ]
    )  # fmt: skip
    assert [a["error"] for a in answers] == [None] * len(got)
    assert [a["payload"] for a in answers] == bodies
    wrong = ask(
        [{"op": "standardwebhooks_verify", "secret": "whsec_" + "A" * 44,
          "body": got[0].body.decode(), "headers": got[0].headers}]
    )  # fmt: skip
    assert wrong[0]["valid"] is False and "signature" in wrong[0]["error"].lower()
    # another secret does not verify them
    with pytest.raises(Exception, match=r"(?i)signature"):
        Webhook("whsec_" + "A" * 44).verify(got[0].body, got[0].headers)


def test_a_500_comes_again_with_the_same_webhook_id(world: World) -> None:
    with receiving(statuses=[500]) as subscriber:
        sub = subscribe(world, subscriber.url, ["run.created"])
        run = new_run(world)
        got = subscriber.wait_for(2, scaled(30))
    assert len(got) == 2, "not tried again"
    assert got[0].headers["webhook-id"] == got[1].headers["webhook-id"]
    assert got[0].body == got[1].body
    assert verified(sub["secret"], got[1])["data"]["run_id"] == run["run_id"]
    base = f"/event-subscriptions/{sub['uid']}/messages"

    def delivered() -> Any:
        listed = world.api("GET", base).json()["messages"]
        return listed if listed and listed[0]["state"] == "delivered" else None

    listed = eventually(delivered)
    assert [m["id"] for m in listed] == [got[0].headers["webhook-id"]]
    assert json.loads(listed[0]["body"]) == json.loads(got[0].body)
    attempts = world.api("GET", f"{base}/{listed[0]['id']}/attempts").json()["attempts"]
    assert [a["n"] for a in attempts] == [1, 2]
    assert attempts[0]["status"] == 500 and "response_excerpt" in attempts[0]
    assert "error" not in attempts[1]


def test_rotation_signs_with_both_secrets_and_retry_sends_again(world: World) -> None:
    with receiving() as subscriber:
        sub = subscribe(world, subscriber.url, ["run.created"])
        rotated = world.api("POST", f"/event-subscriptions/{sub['uid']}/rotate-secret").json()
        new_run(world)
        first = subscriber.wait_for(1, scaled(30))[0]
        assert len(first.headers["webhook-signature"].split(" ")) == 2
        verified(sub["secret"], first)
        verified(rotated["secret"], first)
        base = f"/event-subscriptions/{sub['uid']}/messages"
        message_id = first.headers["webhook-id"]
        eventually(lambda: world.api("GET", f"{base}/{message_id}").json()["state"] == "delivered")
        again = world.api("POST", f"{base}/{message_id}/retry")
        assert again.status_code == 200 and again.json()["state"] == "pending"
        second = subscriber.wait_for(2, scaled(30))[1]
    assert second.headers["webhook-id"] == message_id and second.body == first.body
    none = world.api(
        "POST",
        f"/event-subscriptions/{sub['uid']}/retry-failed",
        json={"since": "2020-01-01T00:00:00Z"},
    )
    assert none.status_code == 200 and none.json() == {"retried": 0}


def test_410_disables_the_subscription_and_tells_the_inbox(world: World) -> None:
    with receiving(statuses=[410]) as subscriber:
        sub = subscribe(world, subscriber.url, ["run.created"])
        new_run(world)
        subscriber.wait_for(1, scaled(30))
        one = f"/event-subscriptions/{sub['uid']}"
        gone = eventually(lambda: (got := world.api("GET", one).json())["enabled"] is False and got)
    assert "410" in gone["disabled_reason"]


def test_failing_past_the_setting_disables_and_tells_the_owners(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clock the dispatcher and the sender read moves on: 2 days on, the first message has
    run out of its schedule (a day) and the subscription is failing, still enabled; 6 days on,
    past GATEWAY_EVENT_SUBSCRIPTION_DISABLE_AFTER_DAYS (5), the next failure disables it."""
    ahead = {"by": timedelta(days=2)}

    def later() -> datetime:
        return utcnow() + ahead["by"]

    monkeypatch.setattr("gateway.foundation.outbound.dispatcher.utcnow", later)
    monkeypatch.setattr("gateway.foundation.subscriptions.delivery.utcnow", later)
    with receiving(statuses=[500] * 10) as subscriber:
        sub = subscribe(world, subscriber.url, ["run.created"])
        one = f"/event-subscriptions/{sub['uid']}"

        def failed(count: int) -> Any:
            listed = world.api("GET", f"{one}/messages").json()["messages"]
            states = [m["state"] for m in listed]
            return states if states.count("failed") == count else None

        new_run(world)
        assert eventually(lambda: failed(1)) == ["failed"]
        assert subscriber.wait_for(1, scaled(30))  # tried once: a day had gone by already
        assert world.api("GET", one).json()["enabled"] is True
        assert not notices(world, sub["uid"])

        ahead["by"] = timedelta(days=6)
        new_run(world)
        eventually(lambda: failed(2))
        disabled = world.api("GET", one).json()
    assert disabled["enabled"] is False
    assert disabled["disabled_reason"] == "its messages failed for 5 days"
    (notice,) = notices(world, sub["uid"])
    assert notice["title"] == f"Event subscription disabled: {subscriber.url}"


def notices(world: World, uid: str) -> list[dict[str, Any]]:
    """The inbox's `subscription_disabled` notifications about subscription `uid`."""
    listed = world.api("GET", "/factory-inbox").json()["notifications"]
    return [n for n in listed if n["kind"] == "subscription_disabled" and uid in n["detail"]]
