"""GET /agent/models and GET /agent/environments, from configuration; runs and agents may only
select what they list."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.conftest import make_settings
from tests.platform.runs.official_client import official_client
from tests.platform.runs.runs_support import advance, new_run
from tests.support import GatewayClient, World

MODELS = [
    {"id": "big", "display_name": "Big", "provider": "acme"},
    {
        "id": "small",
        "display_name": "Small",
        "provider": "acme",
        "default": True,
        "cost": {"input_per_million_tokens": 0.5, "output_per_million_tokens": 2},
    },
    {
        "id": "old",
        "display_name": "Old",
        "provider": "acme",
        "disabled": True,
        "disabled_reason": "retired in March",
    },
]


def _environments(world: World) -> list[dict[str, Any]]:
    return [
        {"uid": "ours", "name": "B ours", "team_uid": world.team_uid, "docker_image": "img:1",
         "github_repos": [{"owner": "acme", "repo": "app"}], "setup_commands": ["make"],
         "last_updated": "2025-03-01T00:00:00+02:00"},
        {"uid": "guest", "name": "A guest", "team_uid": world.other_team_uid,
         "guest_team_uids": [world.team_uid], "last_updated": "2025-01-01T00:00:00Z"},
        {"uid": "shared", "name": "C shared", "link_shared": True,
         "last_updated": "2025-02-01T00:00:00Z"},
        {"uid": "theirs", "name": "D theirs", "team_uid": world.other_team_uid,
         "last_updated": "2025-04-01T00:00:00Z"},
    ]  # fmt: skip


@contextmanager
def configured(database_url: str) -> Iterator[World]:
    """A world, then the gateway restarted on its store with these models and environments."""
    with GatewayClient.running(make_settings(database_url)) as client:
        world = World.create(client)
    settings = make_settings(
        database_url,
        models=json.dumps(MODELS),
        environments=json.dumps(_environments(world)),
    )
    with GatewayClient.running(settings) as client:
        yield dataclasses.replace(world, client=client)


def test_models_list_the_configuration(database_url: str) -> None:
    with configured(database_url) as world:
        listed = world.api("GET", "/agent/models")
        assert listed.status_code == 200
        models = listed.json()["models"]
        assert [m["id"] for m in models] == ["big", "small", "old"]
        assert [m["default"] for m in models] == [False, True, False]
        assert models[1]["cost"] == {
            "input_per_million_tokens": 0.5,
            "output_per_million_tokens": 2,
        }
        assert models[2]["disabled"] and models[2]["disabled_reason"] == "retired in March"
        assert world.api("GET", "/agent/models", headers={}).status_code == 401
        assert world.api("GET", "/agent/models", params={"x": "\u0000"}).status_code == 400


def test_the_built_in_models_and_environment(world: World) -> None:
    models = world.api("GET", "/agent/models").json()["models"]
    assert sum(m["default"] for m in models) == 1 and all(m["provider"] for m in models)
    environments = world.api("GET", "/agent/environments").json()["environments"]
    assert [e["uid"] for e in environments] == ["default"]
    assert environments[0]["access"] == "link_shared" and "scope" not in environments[0]


def test_run_model_ids_are_checked(database_url: str) -> None:
    with configured(database_url) as world:
        for model, detail in (("nope", "unknown model 'nope'"), ("old", "retired in March")):
            response = world.api(
                "POST", "/agent/runs", json={"prompt": "p", "config": {"model_id": model}}
            )
            assert response.status_code == 400
            problem = response.json()
            assert problem["detail"].startswith("config.model_id: ") and detail in problem["detail"]
        run = new_run(world, config={"model_id": "big"})
        assert run["agent_config"] == {"model_id": "big"}


def test_environments_owned_guest_and_link_shared(database_url: str) -> None:
    with configured(database_url) as world:
        listed = world.api("GET", "/agent/environments")
        assert listed.status_code == 200
        environments = listed.json()["environments"]
        # newest last_updated first; the other team's own environment is not listed
        assert [(e["uid"], e["access"]) for e in environments] == [
            ("ours", "owned"),
            ("shared", "link_shared"),
            ("guest", "guest"),
        ]
        ours = environments[0]
        assert ours["scope"] == {"type": "Team", "uid": world.team_uid}
        assert ours["last_updated"] == "2025-02-28T22:00:00Z"
        assert ours["config"]["github_repos"] == [{"owner": "acme", "repo": "app"}]
        assert "scope" not in environments[1] and not ours["setup_failed"]
        by_name = world.api("GET", "/agent/environments", params={"sort_by": "name"}).json()
        assert [e["uid"] for e in by_name["environments"]] == ["guest", "ours", "shared"]
        theirs = world.api("GET", "/agent/environments", headers=world.stranger).json()
        assert {e["uid"]: e["access"] for e in theirs["environments"]} == {
            "theirs": "owned",
            "guest": "owned",
            "shared": "link_shared",
        }
        official = official_client(world).agent.list_environments(sort_by="name")
        assert [e.uid for e in official.environments] == ["guest", "ours", "shared"]


def test_environment_errors(world: World) -> None:
    path = "/agent/environments"
    assert world.api("GET", path, params={"sort_by": "size"}).status_code == 400
    assert world.api("GET", path, headers={}).status_code == 401
    foreign = {**world.user, "X-Service-Team-Uid": world.other_team_uid}
    assert world.api("GET", path, headers=foreign).status_code == 403


def test_setup_failure_and_last_run_come_from_the_runs(database_url: str) -> None:
    with configured(database_url) as world:
        older = new_run(world, config={"environment_id": "ours"})
        advance(world, older["run_id"], "claim", "start", "succeed")
        newest = new_run(world, config={"environment_id": "ours"}, title="latest")
        new_run(world, headers=world.stranger, config={"environment_id": "ours"})  # not theirs

        def ours() -> dict[str, Any]:
            found: dict[str, Any] = world.api("GET", "/agent/environments").json()
            return next(e for e in found["environments"] if e["uid"] == "ours")

        seen = ours()
        assert seen["last_task_created"]["id"] == newest["run_id"]
        assert seen["last_task_created"]["state"] == "QUEUED" and not seen["setup_failed"]
        started = world.api("GET", f"/agent/runs/{older['run_id']}").json()["started_at"]
        assert seen["last_task_run_timestamp"] == started
        advance(
            world, newest["run_id"], "claim", "start", "fail", error_code="environment_setup_failed"
        )
        failed = ours()
        assert failed["setup_failed"] and failed["last_task_created"]["state"] == "FAILED"
        assert failed["last_task_run_timestamp"] >= started


def test_agents_select_listed_models_and_team_environments(database_url: str) -> None:
    with configured(database_url) as world:
        for body, field in (
            ({"base_model": "old"}, "base_model"),
            ({"environment_id": "theirs"}, "environment_id"),
        ):
            response = world.api("POST", "/agent/identities", json={"name": "a", **body})
            assert response.status_code == 400
            assert response.json()["detail"].startswith(field)
        good = {"name": "a", "base_model": "small", "environment_id": "guest"}
        assert world.api("POST", "/agent/identities", json=good).status_code == 201
