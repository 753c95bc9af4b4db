"""A provider connection's deliveries replay as a custom webhook's do (one Replayer): the copy
carries the stored request headers (GitHub names its event there), is evaluated against
today's triggers and starts its runs once; the Idempotency-Key, the bulk replay, the replays'
listing and the refusals answer as a webhook's. SQLite and PostgreSQL, and each backend (the
embedded outbox, the Redis streams)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gateway.kernel.settings import Settings
from tests.connections.provider_world import (
    automation,
    connect,
    deliver,
    evaluated,
    set_repositories,
    started,
    trigger,
)
from tests.connections.test_provider_triggers import labeled_example, octokit_signed
from tests.providers.conftest import GithubExamples
from tests.support import GatewayClient, World


def _github(world: World, github_examples: GithubExamples) -> tuple[dict[str, Any], str, str]:
    """A GitHub connection, an automation on labelled issues, and one delivery that started it."""
    set_repositories(world.client, world.factory_uid, "Codertocat/Hello-World")
    labeled = labeled_example(github_examples)
    bugs = automation(
        world, world.factory_uid, "bugs", trigger("github", "issue_labeled", labels=["bug"])
    )
    github = connect(world, "github")
    sent = octokit_signed(github["secret"], "issues", labeled, f"rp-{time.monotonic_ns()}")
    first = deliver(world.client, github, sent)
    evaluated(world, github, first)
    assert started(world.client, first) == {bugs}
    return github, bugs, first


def test_a_provider_delivery_replays_with_its_headers_and_starts_its_runs_once(
    world: World, github_examples: GithubExamples
) -> None:
    github, bugs, first = _github(world, github_examples)
    base = f"/provider-connections/{github['uid']}"
    path = f"{base}/deliveries/{first}/replay"
    key = {"Authorization": world.user["Authorization"], "Idempotency-Key": "p-1"}

    made = world.api("POST", path, headers=key)
    assert made.status_code == 201, made.text
    again = world.api("POST", path, headers=key)
    assert again.status_code == 200 and again.json() == made.json()
    replay_id = made.json()["delivery_id"]
    assert replay_id != first and made.json()["replay_of"] == first

    replay = evaluated(world, github, replay_id)
    # normalized from the stored X-GitHub-Event like the original: the same event, a new run
    assert replay["trace"]["outcome"] == "matched", replay["trace"]
    assert [e["event"] for e in replay["trace"]["events"]] == ["issue_labeled"]
    assert replay["headers"]["x-github-event"] == "issues"
    assert replay["replay_of"] == first
    assert started(world.client, replay_id) == {bugs}
    assert started(world.client, first) == {bugs}  # the original starts nothing more
    original = world.api("GET", f"{base}/deliveries/{first}").json()
    assert original["replays"] == [replay_id]
    listing = world.api("GET", f"{base}/replays").json()["replays"]
    assert [(r["delivery_id"], r["replay_of"], r["outcome"], r["runs"]) for r in listing] == [
        (replay_id, first, "matched", 1)
    ]


def test_bulk_replay_of_a_connection_is_keyed(
    world: World, github_examples: GithubExamples
) -> None:
    since = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    github, bugs, first = _github(world, github_examples)
    path = f"/provider-connections/{github['uid']}/deliveries/replay"
    key = {"Authorization": world.user["Authorization"], "Idempotency-Key": "bulk-p"}
    body = {"since": since, "outcome": "matched"}

    answer = world.api("POST", path, json=body, headers=key)
    assert answer.status_code == 200, answer.text
    (item,) = answer.json()["items"]
    assert (item["delivery_id"], item["status"]) == (first, "replayed")
    evaluated(world, github, item["replay_delivery_id"])
    assert started(world.client, item["replay_delivery_id"]) == {bugs}
    # the replay is in the range now, matched too: sent again, the request replays nothing new
    repeated = world.api("POST", path, json=body, headers=key).json()
    assert repeated["counts"] == {"replayed_before": 1}, repeated
    # and a new request replays what GitHub sent, not the replay
    again = {**key, "Idempotency-Key": "bulk-q"}
    (fresh,) = world.api("POST", path, json=body, headers=again).json()["items"]
    assert (fresh["delivery_id"], fresh["status"]) == (first, "replayed")


def test_connection_replays_are_refused_as_a_webhooks_are(
    world: World, github_examples: GithubExamples
) -> None:
    github, _bugs, first = _github(world, github_examples)
    base = f"/provider-connections/{github['uid']}"
    path = f"{base}/deliveries/{first}/replay"
    stranger = world.api("POST", path, headers=world.stranger)
    assert stranger.status_code in (403, 404)
    assert world.api("GET", f"{base}/replays", headers=world.stranger).status_code in (403, 404)
    missing = world.api("POST", f"{base}/deliveries/dlv_missing/replay")
    assert missing.status_code == 404 and "connection" in missing.json()["detail"]
    assert world.api("PATCH", base, json={"enabled": False}).status_code == 200
    refused = world.api("POST", path)
    assert refused.status_code == 409 and refused.json()["code"] == "connection_disabled"
    bulk = world.api("POST", f"{base}/deliveries/replay", json={"since": "2020-01-01T00:00:00Z"})
    assert bulk.status_code == 409 and bulk.json()["code"] == "connection_disabled"
    assert world.api("DELETE", base).status_code == 204
    assert world.api("POST", path).status_code == 404


@pytest.fixture
def app(shape_settings: Callable[..., Settings]) -> Iterator[GatewayClient]:
    """Each supported shape: embedded on SQLite, Redis on PostgreSQL."""
    with GatewayClient.running(shape_settings()) as client:
        yield client


def test_a_provider_replay_takes_each_backend_s_durable_path(
    app: GatewayClient, github_examples: GithubExamples
) -> None:
    """Through the Redis streams as through the embedded outbox: the copy is evaluated by the
    one pipeline like a live delivery (the same event from the stored header, one new run)."""
    world = World.create(app)
    github, bugs, first = _github(world, github_examples)
    path = f"/provider-connections/{github['uid']}/deliveries/{first}/replay"
    made = world.api("POST", path)
    assert made.status_code == 201, made.text
    replay_id = made.json()["delivery_id"]
    replay = evaluated(world, github, replay_id)
    assert replay["trace"]["outcome"] == "matched", replay["trace"]
    assert [e["event"] for e in replay["trace"]["events"]] == ["issue_labeled"]
    assert started(app, replay_id) == {bugs}
    assert started(app, first) == {bugs}  # the original's run is not started again
