"""Every run carries the configuration it was resolved with (docs/runs-and-tasks.md#what-a-run-
carries): the public example 02-sdlc-issue-to-pr applied unchanged, each of its six agents' runs
gets that agent's prompt, model, runner file and skills, whether a caller names the agent
(agent_identity_uid) or the factory dispatches to its foreman; a run keeps what it was made with
when the files change later. SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from tests.platform.factory_files.support import (
    EXAMPLE_SECRETS,
    applied,
    example_files,
    set_secrets,
)
from tests.support import World

EXAMPLE = "02-sdlc-issue-to-pr"
# what 02's files give each agent: (agentType, heading of its prompt, model, runner)
EXPECTED = {
    "foreman": ("FOREMAN", "# Foreman", "auto", "linux-standard"),
    "triage": ("TRIAGE", "# Triage", "auto-efficient", "linux-standard"),
    "spec": ("SPEC", "# Spec", "auto", "linux-standard"),
    "implementer": ("IMPLEMENT", "# Implementation", "auto", "linux-build"),
    "reviewer": ("REVIEW", "# Review", "auto-genius", "linux-standard"),
    "mobile-build": ("CUSTOM", "# Mobile build", "auto", "macos-build"),
}


def _apply(world: World, files: dict[str, str]) -> tuple[str, dict[str, str]]:
    factory_uid = applied(world, files)["factory_uid"]
    listed = world.api("GET", f"/agent/identities?factory_uid={factory_uid}").json()["agents"]
    return factory_uid, {agent["name"]: agent["uid"] for agent in listed}


def _run_of(world: World, agent_uid: str) -> dict[str, Any]:
    made = world.api("POST", "/agent/runs", json={"prompt": "Go.", "agent_identity_uid": agent_uid})
    assert made.status_code in (200, 201), made.text
    run: dict[str, Any] = world.api("GET", f"/agent/runs/{made.json()['run_id']}").json()
    return run


def test_each_agent_of_example_02_runs_with_its_own_configuration(world: World) -> None:
    set_secrets(world, {name: "value" for name in EXAMPLE_SECRETS})
    _factory, agents = _apply(world, example_files(EXAMPLE))
    assert set(agents) == set(EXPECTED)
    for name, (agent_type, heading, model, runner) in EXPECTED.items():
        config = _run_of(world, agents[name])["agent_config"]
        assert config["agent"] == {"uid": agents[name], "name": name, "type": agent_type}
        assert config["base_prompt"].startswith(heading), name
        assert config["model_id"] == model, name
        assert config["harness"] == {"type": "oz", "model": model, "model_id": model}
        assert config["runner"] == runner and config["runner_config"]["name"] == runner
        assert config["credential_strategy"] == "EXECUTOR"
        expected_skills = ["repository-conventions"]
        if name == "implementer":  # agents/implementer/skills/testing-standards: its own
            expected_skills.append("testing-standards")
        assert config["skills"] == expected_skills, name
        assert "skill_documents" not in config  # their text goes to the runner, not to readers
    implementer = _run_of(world, agents["implementer"])["agent_config"]["runner_config"]
    assert implementer["docker_image"] == "golang:1.24-bookworm"
    assert implementer["instance_shape"] == {"vcpus": 8, "memory_gb": 16}
    assert "go mod download" in implementer["setup_commands"][0]
    mobile = _run_of(world, agents["mobile-build"])["agent_config"]["runner_config"]
    assert "docker_image" not in mobile and mobile["instance_shape"] == {
        "vcpus": 6,
        "memory_gb": 14,
    }


def test_dispatch_and_request_overrides_and_a_snapshot_that_stays(world: World) -> None:
    set_secrets(world, {name: "value" for name in EXAMPLE_SECRETS})
    files = example_files(EXAMPLE)
    factory_uid, agents = _apply(world, files)

    dispatched = world.api("POST", f"/factory/{factory_uid}/runs", json={"prompt": "Fix it."})
    assert dispatched.status_code in (200, 201), dispatched.text
    run_id = dispatched.json()["run_id"]
    config = world.api("GET", f"/agent/runs/{run_id}").json()["agent_config"]
    assert config["agent"]["name"] == "foreman" and config["base_prompt"].startswith("# Foreman")

    # the request's config wins over the agent's, key by key
    made = world.api(
        "POST",
        "/agent/runs",
        json={
            "prompt": "Go.",
            "agent_identity_uid": agents["reviewer"],
            "config": {"model_id": "auto", "base_prompt": "Only this."},
        },
    )
    overridden = world.api("GET", f"/agent/runs/{made.json()['run_id']}").json()["agent_config"]
    assert overridden["model_id"] == "auto" and overridden["base_prompt"] == "Only this."
    assert overridden["agent"]["name"] == "reviewer" and overridden["runner"] == "linux-standard"

    before = _run_of(world, agents["triage"])
    changed = dict(files)
    path = "agents/triage/agent.md"
    changed[path] = changed[path].replace("# Triage", "# Triage, second edition")
    skill = "skills/repository-conventions/SKILL.md"
    changed[skill] = changed[skill] + "\nOne more rule.\n"
    _apply(world, changed)
    after = _run_of(world, agents["triage"])
    assert after["agent_config"]["base_prompt"].startswith("# Triage, second edition")
    again = world.api("GET", f"/agent/runs/{before['run_id']}").json()
    assert again["agent_config"] == before["agent_config"]  # made before: unchanged
    assert again["agent_config"]["base_prompt"].startswith("# Triage\n")


def test_a_run_of_an_api_agent_carries_its_run_defaults(world: World) -> None:
    created = world.api(
        "POST",
        "/agent/identities",
        json={"name": "helper", "prompt": "Be brief.", "base_model": "auto", "secrets": []},
    )
    assert created.status_code in (200, 201), created.text
    uid = created.json()["uid"]
    config = _run_of(world, uid)["agent_config"]
    assert config["agent"] == {"uid": uid, "name": "helper"}
    assert config["base_prompt"] == "Be brief." and config["model_id"] == "auto"
    # a run nobody's agent executes carries what its request said, as before
    plain = world.api("POST", "/agent/runs", json={"prompt": "Go.", "config": {"name": "x"}})
    assert world.api("GET", f"/agent/runs/{plain.json()['run_id']}").json()["agent_config"] == {
        "name": "x"
    }
