"""GET /agent (SQLite and PostgreSQL): the skills the team's runs can be started from, by name with
a variant per repository, the environments that link each repository, when each last ran."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import make_settings
from tests.support import GatewayClient, World

ENVIRONMENTS = [
    {"uid": "tools-env", "name": "Tools", "link_shared": True,
     "github_repos": [{"owner": "acme", "repo": "tools"}]},
    {"uid": "private", "name": "Private", "team_uid": "team_nobody",
     "github_repos": [{"owner": "acme", "repo": "tools"}]},
]  # fmt: skip


@pytest.fixture
def world(database_url: str) -> Iterator[World]:
    settings = make_settings(database_url, environments=json.dumps(ENVIRONMENTS))
    with GatewayClient.running(settings) as client:
        yield World.create(client)


def _agent(world: World, name: str, skills: list[str]) -> None:
    made = world.api("POST", "/agent/identities", json={"name": name, "skills": skills})
    assert made.status_code == 201, made.text


def _list(world: World, **params: Any) -> list[dict[str, Any]]:
    answer = world.api("GET", "/agent", params=params)
    assert answer.status_code == 200, answer.text
    agents: list[dict[str, Any]] = answer.json()["agents"]
    return agents


def test_the_teams_skills_by_name_with_a_variant_per_repository(world: World) -> None:
    _agent(world, "Reviewer", ["acme/tools:review", "acme/ops:.agents/skills/deploy/SKILL.md"])
    _agent(world, "Other", ["other/repo:review", "acme/tools:review"])
    found = _list(world)
    assert [skill["name"] for skill in found] == ["deploy", "review"]
    deploy, review = found
    assert deploy["variants"] == [
        {
            "id": "acme/ops:.agents/skills/deploy/SKILL.md",
            "base_prompt": "",
            "description": "",
            "environments": [],
            "source": {
                "owner": "acme",
                "name": "ops",
                "skill_path": ".agents/skills/deploy/SKILL.md",
            },
        }
    ]
    assert [v["id"] for v in review["variants"]] == ["acme/tools:review", "other/repo:review"]
    assert review["variants"][0]["environments"] == [{"uid": "tools-env", "name": "Tools"}]
    assert all("last_run_timestamp" not in v for v in review["variants"])
    assert world.api("GET", "/agent", headers=world.stranger).json() == {"agents": []}


def test_last_run_repository_filter_and_order(world: World) -> None:
    _agent(world, "Reviewer", ["acme/tools:review", "acme/ops:deploy"])
    started = world.api("POST", "/agent/runs", json={"skill": "acme/tools:review"})
    assert started.status_code == 200, started.text
    run = world.api("GET", f"/agent/runs/{started.json()['run_id']}").json()
    by_name = {skill["name"]: skill for skill in _list(world)}
    assert by_name["review"]["variants"][0]["last_run_timestamp"] == run["created_at"]
    assert [s["name"] for s in _list(world, sort_by="last_run")] == ["review", "deploy"]
    assert [s["name"] for s in _list(world, sort_by="name")] == ["deploy", "review"]
    assert [s["name"] for s in _list(world, repo="ACME/ops")] == ["deploy"]
    assert _list(world, repo="acme/none", refresh="true", include_malformed_skills="true") == []
    for bad in ({"repo": "acme"}, {"sort_by": "size"}, {"refresh": "maybe"}):
        assert world.api("GET", "/agent", params=bad).status_code == 400, bad


def test_the_team_header_narrows_to_one_team(world: World) -> None:
    _agent(world, "Reviewer", ["acme/tools:review"])
    mine = {**world.user, "X-Service-Team-Uid": world.team_uid}
    assert [s["name"] for s in world.api("GET", "/agent", headers=mine).json()["agents"]] == [
        "review"
    ]
    theirs = {**world.user, "X-Service-Team-Uid": world.other_team_uid}
    assert world.api("GET", "/agent", headers=theirs).status_code == 403


def test_the_skills_factory_files_declare_are_offered(world: World) -> None:
    """`client.agent.list()` of a team whose definition files declare skills: each skill once
    per repository the factory lists, with the file's description and body."""
    from tests.platform.factory_files.support import applied, example_files

    applied(world, example_files("02-sdlc-issue-to-pr"))
    found = {skill["name"]: skill["variants"] for skill in _list(world)}
    assert sorted(found) == ["repository-conventions", "testing-standards"]
    conventions = found["repository-conventions"]
    assert [variant["id"] for variant in conventions] == [
        f"acme/{repo}:skills/repository-conventions/SKILL.md"
        for repo in ("api-service", "ios-app", "webapp")
    ]
    assert conventions[0]["description"].startswith("Shared conventions for branches")
    assert conventions[0]["base_prompt"].startswith("# Repository conventions")
    assert conventions[0]["source"] == {
        "owner": "acme",
        "name": "api-service",
        "skill_path": "skills/repository-conventions/SKILL.md",
    }
    testing = found["testing-standards"][0]
    assert testing["id"] == "acme/api-service:agents/implementer/skills/testing-standards/SKILL.md"
    only = _list(world, repo="acme/webapp")
    assert [len(skill["variants"]) for skill in only] == [1, 1]
    # a run starts from one of them as from any skill spec
    started = world.api("POST", "/agent/run", json={"skill": conventions[0]["id"]})
    assert started.status_code == 200, started.text
