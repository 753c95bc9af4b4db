"""agentDefaults -> agent -> automation, resolved into each effective configuration."""

from __future__ import annotations

import pytest

from factory_format import (
    EffectiveConfig,
    InheritanceError,
    RunConfig,
    parse_tree,
    resolve_effective,
)
from factory_format.model import HarnessLayer
from tests.factory_format.support import EXAMPLE_NAMES, MINIMAL, example_files, parse_with, where

FACTORY = (
    "name: demo\nrepositories: [{owner: acme, name: api}]\n"
    "secrets: [FACTORY_KEY]\nmcpServers: {docs: {warpId: m_docs}}\ncredentialStrategy: CREATOR\n"
    "agentDefaults:\n"
    "  model: auto\n  runner: small\n  environmentId: env_1\n  secrets: [DEFAULT_KEY]\n"
    "  mcpServers: {search: {warpId: m_search}}\n  workerHost: worker-1\n"
)


def effective(agent_front: str, automation_front: str | None = None) -> dict[str, EffectiveConfig]:
    files = {
        "factory.yaml": FACTORY,
        "agents/boss/agent.md": f"---\nagentType: FOREMAN\n{agent_front}---\nLead.\n",
    }
    if automation_front is not None:
        files["automations/job/automation.md"] = (
            f"---\n{automation_front}triggers: [{{provider: slack, event: app_mention}}]\n---\nGo\n"
        )
    result = parse_with(files)
    assert result.tree is not None, result.diagnostics
    found = {a.name: a.effective for a in result.tree.agents}
    found.update({f"automation:{a.name}": a.effective for a in result.tree.automations})
    return found


def test_an_agent_that_declares_nothing_inherits_everything() -> None:
    config = effective("")["boss"]
    assert (config.harness.type, config.harness.model) == ("oz", "auto")
    assert (config.runner, config.environment_id, config.worker_host) == (
        "small",
        "env_1",
        "worker-1",
    )
    assert config.secrets == ("FACTORY_KEY", "DEFAULT_KEY")
    assert config.mcp_servers == {"docs": "m_docs", "search": "m_search"}
    assert config.credential_strategy == "CREATOR"


def test_each_layer_overrides_what_it_declares() -> None:
    found = effective(
        "model: auto-genius\nrunner: big\ncredentialStrategy: EXECUTOR\n",
        "runner: huge\nenvironmentId: env_2\n",
    )
    agent, automation = found["boss"], found["automation:job"]
    assert (agent.harness.model, agent.runner, agent.environment_id) == (
        "auto-genius",
        "big",
        "env_1",
    )
    assert agent.credential_strategy == "EXECUTOR"
    assert (automation.harness.model, automation.runner, automation.environment_id) == (
        "auto-genius",
        "huge",
        "env_2",
    )
    assert automation.credential_strategy == "EXECUTOR"  # the agent's


def test_null_inherits_model_runner_and_environment() -> None:
    config = effective("model: null\nrunner: null\nenvironmentId: null\n")["boss"]
    assert (config.harness.model, config.runner, config.environment_id) == (
        "auto",
        "small",
        "env_1",
    )


def test_secrets_and_mcp_servers_replace_but_the_factory_wide_ones_stay() -> None:
    found = effective("secrets: [AGENT_KEY]\nmcpServers: {}\n", "secrets: []\n")
    assert found["boss"].secrets == ("FACTORY_KEY", "AGENT_KEY")
    assert found["boss"].mcp_servers == {"docs": "m_docs"}
    assert found["automation:job"].secrets == ("FACTORY_KEY",)
    assert found["automation:job"].mcp_servers == {"docs": "m_docs"}


def test_null_or_empty_worker_host_clears_and_a_value_overrides() -> None:
    assert effective("workerHost: null\n")["boss"].worker_host is None
    assert effective("workerHost: ''\n")["boss"].worker_host is None
    found = effective("workerHost: null\n", "workerHost: warp\n")
    assert found["automation:job"].worker_host == "warp"


def test_a_harness_override_keeps_the_other_keys_unless_it_changes_type() -> None:
    found = effective(
        "harness: {type: codex, model: gpt-5.3-codex, reasoningLevel: high,"
        " auth: {source: managedSecret, secretName: OPENAI}}\n",
        "harness: {reasoningLevel: low}\n",
    )
    agent, automation = found["boss"].harness, found["automation:job"].harness
    assert (agent.type, agent.model, agent.reasoning_level) == ("codex", "gpt-5.3-codex", "high")
    assert (automation.type, automation.model, automation.reasoning_level) == (
        "codex",
        "gpt-5.3-codex",
        "low",
    )
    assert automation.auth == agent.auth
    cleared = effective(
        "harness: {type: codex, model: m, reasoningLevel: high}\n",
        "harness: {reasoningLevel: null}\n",
    )
    assert cleared["automation:job"].harness.reasoning_level is None
    back = effective("harness: {type: codex, model: m, reasoningLevel: high}\n", "model: auto\n")
    assert back["automation:job"].harness.type == "oz"
    assert back["automation:job"].harness.reasoning_level is None


def test_a_harness_alias_is_made_canonical() -> None:
    config = effective("harness: {type: claude-code, model: opus}\n")["boss"]
    assert config.harness.type == "claude"


AGENT = "agents/boss/agent.md"


def test_a_type_change_must_name_a_model() -> None:
    result = parse_with({AGENT: "---\nagentType: FOREMAN\nharness: {type: gemini}\n---\n"})
    assert where(result) == [(AGENT, 3, 17, "FF_INVALID_HARNESS")]
    assert "switches from oz to gemini" in result.diagnostics[0].message


def test_reasoning_level_on_an_inherited_oz_harness() -> None:
    result = parse_with({AGENT: "---\nagentType: FOREMAN\nharness: {reasoningLevel: high}\n---\n"})
    assert where(result) == [(AGENT, 3, 11, "FF_INVALID_HARNESS")]


def test_worker_environment_auth_needs_a_self_hosted_worker() -> None:
    auth = "harness: {type: codex, model: m, auth: {source: workerEnvironment}}\n"
    bad = parse_with({AGENT: f"---\nagentType: FOREMAN\n{auth}---\n"})
    assert where(bad) == [(AGENT, 3, 41, "FF_INVALID_HARNESS")]
    assert parse_with({AGENT: f"---\nagentType: FOREMAN\n{auth}workerHost: w1\n---\n"}).ok
    # an automation moving the run back to Warp-hosted compute breaks the inherited auth
    files = {
        AGENT: f"---\nagentType: FOREMAN\n{auth}workerHost: w1\n---\n",
        "automations/job/automation.md": "---\nworkerHost: warp\ntriggers: "
        "[{provider: slack, event: app_mention}]\n---\nGo\n",
    }
    assert where(parse_with(files)) == [(AGENT, 3, 41, "FF_INVALID_HARNESS")]


def test_an_automation_targets_its_agent_or_the_foreman() -> None:
    trigger = "triggers: [{provider: slack, event: app_mention}]\n"
    files = {
        "agents/helper/agent.md": "---\nmodel: auto-efficient\n---\nHelp.\n",
        "automations/a/automation.md": f"---\nagent: helper\n{trigger}---\nGo\n",
        "automations/b/automation.md": f"---\n{trigger}---\nGo\n",
    }
    tree = parse_with(files).tree
    assert tree is not None
    by_name = {a.name: a for a in tree.automations}
    assert (by_name["a"].agent, by_name["a"].effective.harness.model) == (
        "helper",
        "auto-efficient",
    )
    assert (by_name["b"].agent, by_name["b"].effective.harness.model) == ("boss", "auto")
    assert MINIMAL  # the small tree the others extend


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_the_pure_resolution_gives_what_the_tree_stores(name: str) -> None:
    tree = parse_tree(example_files(name)).tree
    assert tree is not None
    agents = {a.name: a for a in tree.agents}
    for agent in tree.agents:
        assert resolve_effective(
            tree.factory, agent.config, agent_credential_strategy=agent.credential_strategy
        ) == (agent.effective)
    for automation in tree.automations:
        target = agents[automation.agent]
        assert resolve_effective(
            tree.factory,
            target.config,
            automation.config,
            agent_credential_strategy=target.credential_strategy,
        ) == (automation.effective)


def test_the_pure_resolution_raises_on_a_harness_that_does_not_hold() -> None:
    tree = parse_tree(example_files("01-single-repo-quickstart")).tree
    assert tree is not None
    switch = RunConfig(harness=HarnessLayer(type="claude"))
    with pytest.raises(InheritanceError, match="switches from oz to claude") as caught:
        resolve_effective(tree.factory, RunConfig(), switch)
    assert caught.value.problem.layer == "automation"
    assert caught.value.problem.key == ("harness", "type")
