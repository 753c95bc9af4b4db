"""The 8 public example factories (warpdotdev/warp-factory-examples, MIT, copied unchanged
into tests/fixtures) parse with no diagnostic, into the resources they declare."""

from __future__ import annotations

import hashlib

import pytest

from factory_format import parse_directory, parse_tree
from tests.factory_format.support import EXAMPLE_NAMES, EXAMPLES, FIXTURES, example_files

EXPECTED: dict[str, dict[str, set[str]]] = {
    "00-warp-default-agents": {
        "agent": {"foreman", "implement", "review", "spec", "triage"},
        "runner": {"linux-standard"},
    },
    "01-single-repo-quickstart": {"agent": {"foreman", "implementer"}, "runner": {"linux-small"}},
    "02-sdlc-issue-to-pr": {
        "agent": {"foreman", "implementer", "mobile-build", "reviewer", "spec", "triage"},
        "automation": {
            "github-mention-assign",
            "github-pr-closed-or-merged",
            "linear-agent-sessions",
            "slack-app-mentions",
            "slack-dms",
        },
        "runner": {"linux-build", "linux-standard", "macos-build"},
        "scorer": {"review-quality", "task-compliance"},
        "skill": {"repository-conventions"},
        "agent_skill": {"implementer/testing-standards"},
    },
    "03-multi-harness": {
        "agent": {"foreman", "implementer", "reviewer"},
        "automation": {"issue-labeled"},
        "runner": {"linux-arm64", "linux-standard"},
    },
    "04-code-review-only": {
        "agent": {"reviewer"},
        "automation": {"pr-opened"},
        "runner": {"linux-small"},
    },
    "05-ui-verification": {
        "agent": {"verifier"},
        "automation": {"issue-needs-repro", "pr-needs-ui-check"},
        "runner": {"linux-app"},
    },
    "06-common-automations": {
        "agent": {"maintainer"},
        "automation": {
            "ci-failure-triage",
            "docs-drift-on-push",
            "slack-reaction-intake",
            "weekly-dependency-audit",
        },
        "runner": {"linux-standard"},
    },
    "07-self-hosted-worker": {
        "agent": {"foreman", "implementer"},
        "automation": {"issue-labeled"},
        "runner": {"linux-worker"},
    },
}


def test_the_fixtures_are_the_eight_examples_and_their_licence() -> None:
    assert sorted(EXPECTED) == EXAMPLE_NAMES
    files = sorted(p for p in FIXTURES.rglob("*") if p.is_file())
    assert len(files) == 67  # 66 example files and LICENSE
    assert (FIXTURES / "LICENSE").read_text().startswith("MIT License")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_example_parses_into_the_resources_it_declares(name: str) -> None:
    result = parse_tree(example_files(name))
    assert result.diagnostics == ()
    assert result.tree is not None
    found: dict[str, set[str]] = {}
    for kind, resource_name in result.tree.resources():
        if kind != "factory":
            found.setdefault(kind, set()).add(resource_name)
    assert found == EXPECTED[name]
    assert result.tree.factory.name == name[3:]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_directory_reads_as_the_same_tree(name: str) -> None:
    assert parse_directory(EXAMPLES / name) == parse_tree(example_files(name))


def test_what_example_02_declares_reaches_the_model() -> None:
    tree = parse_tree(example_files("02-sdlc-issue-to-pr")).tree
    assert tree is not None
    assert tree.factory.alias == "Acme" and tree.factory.credential_strategy == "EXECUTOR"
    assert [i.type for i in tree.factory.integrations or ()] == ["slack", "linear"]
    agents = {a.name: a for a in tree.agents}
    assert agents["foreman"].agent_type == "FOREMAN"
    assert agents["triage"].effective.harness.model == "auto-efficient"
    assert agents["implementer"].effective.runner == "linux-build"
    assert agents["implementer"].skills == ("testing-standards",)
    assert agents["spec"].effective.harness.model == "auto"  # agentDefaults
    assert agents["spec"].effective.runner == "linux-standard"
    macos = next(r for r in tree.runners if r.name == "macos-build")
    assert (macos.platform.os, macos.platform.arch, macos.platform.mac_version) == (
        "macos",
        "aarch64",
        "26",
    )
    scorer = next(s for s in tree.scorers if s.name == "task-compliance")
    assert scorer.self_improvement and scorer.agents == ("implementer",)
    assert scorer.rubric.startswith("Compare the pull request")
    mention = next(a for a in tree.automations if a.name == "github-mention-assign")
    assert mention.agent == "foreman"  # no `agent:`: the FOREMAN agent
    assert [t.event for t in mention.triggers] == [
        "issue_mentioned",
        "pull_request_mentioned",
        "issue_assigned",
        "pull_request_assigned",
    ]
    assert mention.triggers[0].filter["repos"].in_ == ("acme/api-service", "acme/webapp")


def test_harnesses_and_worker_hosts_of_examples_03_and_07() -> None:
    tree = parse_tree(example_files("03-multi-harness")).tree
    assert tree is not None
    agents = {a.name: a.effective for a in tree.agents}
    assert agents["implementer"].harness.type == "claude"
    assert agents["implementer"].harness.model == "opus"
    assert agents["implementer"].harness.auth is not None
    assert agents["implementer"].harness.auth.secret_name == "ANTHROPIC_API_KEY"
    assert agents["reviewer"].harness.reasoning_level == "high"
    assert agents["foreman"].harness.type == "oz"
    kinds = {(r.kind, r.value) for r in tree.deferred_references}
    assert ("harness_model", "opus") in kinds and ("secret", "OPENAI_API_KEY") in kinds
    worker = parse_tree(example_files("07-self-hosted-worker")).tree
    assert worker is not None
    assert {a.effective.worker_host for a in worker.agents} == {"factory-worker"}
    assert ("worker_host", "factory-worker") in {
        (r.kind, r.value) for r in worker.deferred_references
    }


def test_the_schedule_and_slack_triggers_of_example_06() -> None:
    tree = parse_tree(example_files("06-common-automations")).tree
    assert tree is not None
    automations = {a.name: a for a in tree.automations}
    audit = automations["weekly-dependency-audit"].triggers[0]
    assert audit.schedule is not None
    assert (audit.schedule.name, audit.schedule.cron) == ("weekly-dependency-audit", "0 9 * * 1")
    reaction = automations["slack-reaction-intake"].triggers[0]
    assert reaction.filter["channel_ids"].in_ == ("your-intake-channel",)
    assert reaction.filter["channel_ids"].by_name  # written as `channels`: a name to resolve
    deferred = [r for r in tree.deferred_references if r.kind == "provider_name"]
    assert [(r.value, r.detail, r.line) for r in deferred] == [
        ("your-intake-channel", "slack channel_ids", 6)
    ]


def test_fixture_files_are_unchanged() -> None:
    """A digest of every fixture byte: editing a copied example is a test failure."""
    digest = hashlib.sha256()
    for path in sorted(p for p in FIXTURES.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(FIXTURES)).encode() + b"\0" + path.read_bytes())
    assert digest.hexdigest() == FIXTURE_DIGEST


FIXTURE_DIGEST = "f1662074f28e739079c4b54efa6180b02acc539bf6f4e21d323dc7903da68138"
