"""The 8 public example factories (tests/fixtures/warp-factory-examples) through the API: each
applies unchanged, applies again with an empty plan, and an edited tree plans and applies exactly
its edits; on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from factory_format import parse_tree
from tests.platform.factory_files.support import (
    EXAMPLE_NAMES,
    EXAMPLE_SECRETS,
    applied,
    definition,
    example_files,
    post,
    set_secrets,
)
from tests.support import World


def _keys(tree_files: dict[str, str]) -> set[tuple[str, str]]:
    tree = parse_tree(tree_files).tree
    assert tree is not None
    return {key for key in tree.resources() if key[0] != "factory"}


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_each_example_applies_unchanged_then_plans_empty(world: World, name: str) -> None:
    set_secrets(world, {secret: "sk-test" for secret in EXAMPLE_SECRETS})
    files = example_files(name)
    plan = post(world, "plan", files)
    assert plan.status_code == 200, plan.json()
    assert plan.json()["factory_uid"] is None  # a plan creates nothing
    # the catalogue lists every model the examples name (06's Slack filter by channel name is
    # FF_NEVER_FIRES: Slack's events carry ids only)
    assert not [w for w in plan.json()["warnings"] if w["code"] == "FF_UNLISTED_MODEL"]

    first = applied(world, files)
    assert first["changes"] == plan.json()["changes"]
    assert {c["action"] for c in first["changes"]} == {"create"}
    created = {(c["kind"], c["name"]) for c in first["changes"] if c["kind"] != "factory"}
    assert created == _keys(files)
    stored = definition(world, first["factory_uid"])
    assert {key for key in stored if key[0] != "factory"} == created

    again = post(world, "plan", files)
    assert again.status_code == 200 and again.json()["changes"] == []
    second = applied(world, files)  # found by its name in the team: the same factory
    assert second == {**first, "changes": []}
    assert definition(world, first["factory_uid"]) == stored


def _edited(files: dict[str, str]) -> dict[str, str]:
    """02 with one automation renamed, one agent removed and one filter changed."""
    edited = dict(files)
    edited["automations/slack-direct-messages/automation.md"] = edited.pop(
        "automations/slack-dms/automation.md"
    )
    del edited["agents/spec/agent.md"]
    path = "automations/github-pr-closed-or-merged/automation.md"
    old = "repos: [acme/api-service, acme/webapp, acme/ios-app]"
    assert edited[path].count(old) == 2
    edited[path] = edited[path].replace(old, "repos: [acme/api-service, acme/webapp]", 1)
    return edited


def test_an_edited_tree_plans_and_applies_exactly_its_edits(world: World) -> None:
    files = example_files("02-sdlc-issue-to-pr")
    first = applied(world, files)
    before = definition(world, first["factory_uid"])
    edited = _edited(files)

    expected = [
        {"kind": "agent", "name": "spec", "action": "delete"},
        {
            "kind": "automation",
            "name": "github-pr-closed-or-merged",
            "action": "update",
            "fields": ["triggers"],
        },
        {"kind": "automation", "name": "slack-direct-messages", "action": "create"},
        {"kind": "automation", "name": "slack-dms", "action": "delete"},
    ]
    plan = post(world, "plan", edited)
    assert plan.status_code == 200 and plan.json()["changes"] == expected
    assert definition(world, first["factory_uid"]) == before  # planning changed nothing

    done = applied(world, edited)
    assert done["changes"] == expected and done["factory_uid"] == first["factory_uid"]
    after = definition(world, first["factory_uid"])
    assert set(after) == set(before) - {("agent", "spec"), ("automation", "slack-dms")} | {
        ("automation", "slack-direct-messages")
    }
    changed = ("automation", "github-pr-closed-or-merged")
    assert after[changed]["uid"] == before[changed]["uid"]  # updated in place
    repos = [t["filter"]["repos"]["in"] for t in after[changed]["definition"]["triggers"]]
    assert repos == [
        ["acme/api-service", "acme/webapp"],
        ["acme/api-service", "acme/ios-app", "acme/webapp"],
    ]
    untouched = {
        key for key in after if key not in {changed, ("automation", "slack-direct-messages")}
    }
    assert all(after[key] == before[key] for key in untouched)
    assert post(world, "plan", edited).json()["changes"] == []

    agents = world.api("GET", f"/agent/identities?factory_uid={first['factory_uid']}").json()
    assert "spec" not in {agent["name"] for agent in agents["agents"]}
    names = {
        a["name"]
        for a in world.api("GET", f"/factory/{first['factory_uid']}/automations").json()[
            "automations"
        ]
    }
    assert "slack-direct-messages" in names and "slack-dms" not in names


def test_inheritance_shows_on_the_stored_resources(world: World) -> None:
    """agentDefaults -> agent -> automation, on what the agents and automations APIs answer."""
    files = example_files("07-self-hosted-worker")
    factory_uid = applied(world, files)["factory_uid"]
    factory = world.api("GET", f"/factory/{factory_uid}").json()
    agents = world.api("GET", f"/agent/identities?factory_uid={factory_uid}").json()["agents"]
    by_name = {agent["name"]: agent for agent in agents}
    assert factory["foreman_agent_uid"] == by_name["foreman"]["uid"]  # the FOREMAN agent
    for agent in agents:  # agentDefaults: model auto, workerHost factory-worker
        assert agent["base_model"] == "auto" and agent["worker_host"] == "factory-worker"
        assert agent["factory_uid"] == factory_uid
    automations = world.api("GET", f"/factory/{factory_uid}/automations").json()["automations"]
    (automation,) = automations
    assert automation["definition_name"] == "issue-labeled"
    assert automation["effective"]["harness"] == {"type": "oz", "model": "auto"}
    assert automation["effective"]["worker_host"] == "factory-worker"
    assert automation["effective"]["runner"] == "linux-worker"
    assert automation["agent_uid"] in {agent["uid"] for agent in agents}


def test_a_worker_host_not_registered_yet_is_waited_for(world: World) -> None:
    applied(world, example_files("07-self-hosted-worker"))
    workers = world.api("GET", "/agent/workers").json()
    assert workers["waiting"] == [
        {
            "worker_host": "factory-worker",
            "factory_uids": [workers["waiting"][0]["factory_uids"][0]],
        }
    ]
    # a runner's name is only its label: the worker is the runner registered under its id
    # (`gateway runner --worker-id factory-worker`)
    named = world.api(
        "POST", "/runner/register", headers=world.agent, json={"name": "factory-worker"}
    )
    assert named.status_code == 201
    assert len(world.api("GET", "/agent/workers").json()["waiting"]) == 1
    registered = world.api(
        "POST",
        "/runner/register",
        headers=world.agent,
        json={"name": "box", "worker_id": "factory-worker"},
    )
    assert registered.status_code == 201
    assert world.api("GET", "/agent/workers").json()["waiting"] == []


def test_five_planted_errors_are_five_diagnostics_and_change_nothing(world: World) -> None:
    """The planted errors of tests/factory_format/test_planted_errors.py, through the API, on
    a factory the unedited tree applied to."""
    from tests.factory_format.test_planted_errors import (
        EXAMPLE,
        FIVE_DIAGNOSTICS,
        plant_five_errors,
    )

    files = example_files(EXAMPLE)
    factory_uid = applied(world, files)["factory_uid"]
    before = definition(world, factory_uid)
    plant_five_errors(files)

    for operation in ("plan", "apply"):
        response = post(world, operation, files)
        assert response.status_code == 422
        found = response.json()["diagnostics"]
        assert [(d["path"], d["line"], d["column"], d["code"]) for d in found] == FIVE_DIAGNOSTICS
        assert response.json()["detail"].startswith("automations/github-mention-assign")
    assert definition(world, factory_uid) == before
