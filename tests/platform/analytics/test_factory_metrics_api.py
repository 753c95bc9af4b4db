"""Factory metrics over HTTP: data reported by a runner, parameter checks, access, and the
per-caller request budget in memory and in Redis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gateway.foundation.accounts import factories
from gateway.platform.analytics import pull_requests
from tests.api.openapi_shapes import shape_errors
from tests.conftest import make_settings
from tests.support import GatewayClient, World, eventually

ENDPOINTS = [
    ("/metrics", {}),
    ("/costs/per-pr", {}),
    ("/costs/breakdown", {"group_by": "source"}),
    ("/costs/per-pr/top", {}),
    ("/costs/per-pr/by-size", {}),
    ("/metrics/run-counts", {"group_by": "state"}),
]


def _get(world: World, path: str, headers: Any = None, **params: Any) -> Any:
    return world.api("GET", f"/factory/{world.factory_uid}{path}", headers=headers, params=params)


def _runner_reports(world: World, prs: list[tuple[str, str]], dollars: float) -> list[str]:
    """Dispatches one factory run per (PR url, state), and a runner reports each PR and usage."""
    for _ in prs:
        created = world.api("POST", f"/factory/{world.factory_uid}/runs", json={"prompt": "p"})
        assert created.status_code == 201, created.text
    agent = world.agent
    runner = world.api("POST", "/runner/register", headers=agent, json={"name": "r"}).json()
    held = {"runner_uid": runner["runner_uid"]}
    claim = held | {"max_runs": 10, "wait_s": 0}
    run_ids: list[str] = []  # oldest first

    def claimed_all() -> bool:
        # a run the task binder holds at that moment is skipped (SKIP LOCKED): claim again
        runs = world.api("POST", "/runner/claim", headers=agent, json=claim).json()["runs"]
        run_ids.extend(run["run_id"] for run in runs)
        return len(run_ids) == len(prs)

    eventually(claimed_all)
    run_ids.sort(key=lambda run_id: _created(world, run_id))
    for run_id, (url, state) in zip(run_ids, prs, strict=True):
        base = f"/runner/runs/{run_id}"
        pull = held | {"artifact_type": "PULL_REQUEST", "url": url, "branch": "b", "state": state}
        assert world.api("POST", f"{base}/artifacts", headers=agent, json=pull).status_code == 201
        usage = held | {"model_id": "m", "input_tokens": 1, "output_tokens": 1}
        usage |= {"cost_usd": {"llm": dollars}}
        assert world.api("POST", f"{base}/usage", headers=agent, json=usage).status_code == 200
    return run_ids


def _created(world: World, run_id: str) -> str:
    created: str = world.api("GET", f"/agent/runs/{run_id}").json()["created_at"]
    return created


def test_runner_reports_become_metrics(world: World) -> None:
    url = "https://git.test/o/r/pull/7"
    first, second = _runner_reports(world, [(url, "open"), (url, "merged")], 0.5)
    metrics = _get(world, "/metrics").json()
    assert (metrics["run_count"], metrics["pr_count"]) == (2, 1)  # one URL, counted once
    assert metrics["impact"]["merged_pr_count"] == 1  # the latest report's state
    listed = _get(world, "/pull-requests").json()["pull_requests"]
    assert [(pr["url"], pr["run_id"], pr["state"]) for pr in listed] == [(url, first, "merged")]
    per_pr = _get(world, "/costs/per-pr").json()
    assert (per_pr["pr_count"], per_pr["mean_cost_usd"]) == (1, 0.5)  # the first run's tree
    breakdown = _get(world, "/costs/breakdown", group_by="agent").json()
    assert [(g["key"], g["label"], g["cost_usd"]) for g in breakdown["groups"]] == [
        (world.agent_uid, "Foreman", 1.0)
    ]
    assert second != first


def test_default_range_is_the_last_30_days(world: World) -> None:
    before = datetime.now(UTC)
    body = _get(world, "/metrics").json()
    end = datetime.fromisoformat(body["end_date"])
    assert before <= end <= datetime.now(UTC)
    assert datetime.fromisoformat(body["start_date"]) == end - timedelta(days=30)
    assert body["group_by_period"] is None and body["run_count"] == 0
    given = {"start_date": "2026-01-01T00:00:00+02:00", "end_date": "2026-02-01T00:00:00Z"}
    body = _get(world, "/metrics", **given).json()
    assert (body["start_date"], body["end_date"]) == (
        "2025-12-31T22:00:00Z",
        "2026-02-01T00:00:00Z",
    )


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/metrics", {"start_date": "2026-02-01T00:00:00Z", "end_date": "2026-01-01T00:00:00Z"},
         "start_date"),
        ("/metrics", {"start_date": "2026-01-01T00:00:00"}, "start_date"),  # no offset
        ("/metrics", {"end_date": "soon"}, "end_date"),
        ("/metrics", {"group_by_period": "year"}, "group_by_period"),
        ("/costs/per-pr", {"start_date": "2024-01-01T00:00:00Z", "end_date": "2025-01-01T00:00:01Z",
                           "group_by_period": "day"}, "group_by_period"),
        ("/costs/breakdown", {}, "group_by"),
        ("/costs/breakdown", {"group_by": "team"}, "group_by"),
        ("/costs/per-pr/top", {"limit": "0"}, "limit"),
        ("/costs/per-pr/top", {"limit": "51"}, "limit"),
        ("/costs/per-pr/top", {"group_by_period": "day"}, "group_by_period"),
        ("/costs/per-pr/by-size", {"group_by_period": "week"}, "group_by_period"),
        ("/metrics/run-counts", {"group_by": "model"}, "group_by"),
        ("/pull-requests", {"cursor": "forged"}, "cursor"),
        ("/pull-requests", {"limit": "101"}, "limit"),
        ("/pull-requests", {"updated_after": "yesterday"}, "updated_after"),
    ],
)  # fmt: skip
def test_invalid_parameters_are_400_naming_the_field(
    shared_world: World, path: str, params: dict[str, str], field: str
) -> None:
    response = _get(shared_world, path, **params)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["detail"].startswith(f"{field}:"), response.json()


def test_access(world: World) -> None:
    for path, params in ENDPOINTS:
        assert _get(world, path, headers={}, **params).status_code == 401
        stranger = _get(world, path, headers=world.stranger, **params).status_code
        assert stranger == (404 if path == "/costs/breakdown" else 403), path
        missing = world.api("GET", f"/factory/fac_missing{path}", params=params)
        assert missing.status_code == 404
    assert _get(world, "/pull-requests", headers=world.stranger).status_code == 403
    assert _get(world, "/metrics", headers=world.agent).status_code == 200  # a team's agent


def _spend_budget(client: GatewayClient) -> None:
    world = World.create(client)
    for path, params in ENDPOINTS[:3]:
        assert _get(world, path, **params).status_code == 200
    refused = _get(world, "/costs/per-pr/top")
    assert refused.status_code == 429
    problem = refused.json()
    assert (problem["code"], problem["status"]) == ("metrics_rate_limited", 429)
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert not shape_errors("GET", "/api/v1/factory/{uid}/costs/per-pr/top", refused)
    assert _get(world, "/metrics", headers=world.agent).status_code == 200  # its own budget
    assert _get(world, "/pull-requests").status_code == 200  # listing is not metered


def test_each_caller_has_a_budget(database_url: str) -> None:
    with GatewayClient.running(make_settings(database_url, metrics_rate_limit="3")) as client:
        _spend_budget(client)


def test_the_budget_is_shared_through_redis(
    database_url: str, redis_url: str, redis_prefix: str
) -> None:
    settings = make_settings(
        database_url, redis_url, prefix=f"{redis_prefix}:budget", metrics_rate_limit="3"
    )
    with GatewayClient.running(settings) as client:
        _spend_budget(client)
        world = World.create(client)
        for _ in range(3):
            assert _get(world, "/metrics").status_code == 200
        with GatewayClient.running(settings) as other:  # a second process, same Redis
            assert _get(World(other, *_fields(world)), "/metrics").status_code == 429


def _fields(world: World) -> list[Any]:
    return [
        world.team_uid,
        world.user_uid,
        world.user_key,
        world.agent_uid,
        world.agent_key,
        world.factory_uid,
        world.other_team_uid,
        world.stranger_key,
    ]


def _pull_request_event(url: str, additions: int) -> dict[str, Any]:
    pull = {"html_url": url, "additions": additions, "deletions": 1, "changed_files": 2}
    pull |= {"state": "closed", "merged_at": "2026-10-04T00:00:00Z", "title": "Fix it"}
    return {"action": "closed", "number": 7, "pull_request": pull}


def _webhook(world: World, factory_uid: str) -> dict[str, Any]:
    hook: dict[str, Any] = world.api(
        "POST", f"/factory/{factory_uid}/webhooks", json={"name": "forge"}
    ).json()
    return hook


def test_code_forge_webhooks_add_pr_detail(world: World) -> None:
    url = "https://git.test/o/r/pull/9"
    _runner_reports(world, [(url, "open")], 1.0)

    async def other_factory(services: Any) -> str:
        async with services.database.transaction() as conn:
            return await factories.create_factory(conn, world.team_uid, "Other", None, None)

    foreign = _webhook(world, world.client.run(other_factory))["uid"]

    async def through_another_factory(services: Any) -> bool:
        async with services.database.transaction() as conn:
            event = _pull_request_event(url, 500)
            return await pull_requests.record_forge_detail(conn, event, foreign)

    assert not world.client.run(through_another_factory)  # not its factory's PR
    hook = _webhook(world, world.factory_uid)
    bearer = {"Authorization": f"Bearer {hook['secret']}"}
    sent = world.client.post(
        f"/webhooks/w/{hook['uid']}", headers=bearer, json=_pull_request_event(url, 40)
    )
    assert sent.status_code == 202, sent.text

    def described() -> Any:
        listed = _get(world, "/pull-requests").json()["pull_requests"]
        return listed if listed[0]["additions"] is not None else None

    pr = eventually(described)[0]
    assert (pr["additions"], pr["deletions"], pr["changed_files"]) == (40, 1, 2)
    assert (pr["state"], pr["title"], pr["merged_at"]) == (
        "merged",
        "Fix it",
        "2026-10-04T00:00:00Z",
    )
    sizes = {
        b["size"]: b["pr_count"] for b in _get(world, "/costs/per-pr/by-size").json()["buckets"]
    }
    assert sizes["S"] == 1 and sizes["UNKNOWN"] == 0
