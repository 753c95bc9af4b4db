"""Event subscriptions through the API (CONTRACT §10): the secret shown once, events checked
by name, team scope, patch, rotate (the old secret kept 24 h) and delete."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support import World

BASE = "/event-subscriptions"
FIELDS = {"uid", "url", "events", "enabled", "created_at", "updated_at"}


def subscribe(world: World, **body: Any) -> Any:
    response = world.api("POST", BASE, json={"url": "https://example.test/hook", **body})
    assert response.status_code == 201, response.text
    return response.json()


def test_create_shows_the_secret_once_and_lists_without_it(world: World) -> None:
    made = subscribe(world, events=["run.*", "delivery.rejected"], description="ops")
    assert set(made) == FIELDS | {"secret", "description"}
    assert made["uid"].startswith("evs_") and made["secret"].startswith("whsec_")
    assert made["events"] == ["run.*", "delivery.rejected"] and made["enabled"] is True
    got = world.api("GET", f"{BASE}/{made['uid']}").json()
    assert "secret" not in got and got["uid"] == made["uid"]
    listed = world.api("GET", BASE).json()["event_subscriptions"]
    assert [item["uid"] for item in listed] == [made["uid"]]
    assert world.api("GET", BASE, headers=world.stranger).json()["event_subscriptions"] == []
    foreign = world.api("GET", f"{BASE}/{made['uid']}", headers=world.stranger)
    assert foreign.status_code == 403


def test_unknown_event_types_are_refused_naming_the_field(world: World) -> None:
    for events, field in (
        (["run.created", "run.exploded"], "events[1]"),
        (["nope.*"], "events[0]"),
    ):
        refused = world.api("POST", BASE, json={"url": "https://example.test/", "events": events})
        assert refused.status_code == 400, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["detail"].startswith(f"{field}: unknown event type")
    empty = world.api("POST", BASE, json={"url": "https://example.test/", "events": []})
    assert empty.status_code == 400 and empty.json()["detail"].startswith("events:")
    bad_url = world.api("POST", BASE, json={"url": "ftp://example.test/", "events": ["*"]})
    assert bad_url.status_code == 400 and bad_url.json()["detail"].startswith("url:")
    factory = world.api(
        "POST", BASE, json={"url": "https://e.test/", "events": ["*"], "factory_uid": "fac_x"}
    )
    assert factory.status_code == 400 and factory.json()["detail"].startswith("factory_uid:")


def test_patch_rotate_and_delete(world: World) -> None:
    made = subscribe(world, events=["run.succeeded"], factory_uid=world.factory_uid)
    one = f"{BASE}/{made['uid']}"
    changed = world.api(
        "PATCH",
        one,
        json={"url": "https://example.test/v2", "events": ["work_item.*"], "enabled": False},
    )
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert body["url"] == "https://example.test/v2" and body["events"] == ["work_item.*"]
    assert body["enabled"] is False and body["factory_uid"] == world.factory_uid
    refused = world.api("PATCH", one, json={"events": ["runs.*"]})
    assert refused.status_code == 400 and refused.json()["detail"].startswith("events[0]:")
    assert world.api("PATCH", one, json={"events": ["x"]}, headers=world.agent).status_code == 403

    rotated = world.api("POST", f"{one}/rotate-secret")
    assert rotated.status_code == 200, rotated.text
    secret = rotated.json()["secret"]
    assert secret.startswith("whsec_") and secret != made["secret"]
    until = datetime.fromisoformat(rotated.json()["previous_secret_expires_at"])
    assert abs(until - (datetime.now(UTC) + timedelta(hours=24))) < timedelta(minutes=1)

    assert world.api("DELETE", one).status_code == 204
    assert world.api("GET", one).status_code == 404
    assert world.api("DELETE", one).status_code == 404
