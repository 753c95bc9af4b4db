"""`gateway apply DIR [--team T | --factory UID] [--dry-run]`: the plan it carried out as one
JSON object; a repository whose definition root is a subdirectory; problems on standard error,
nothing changed."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.platform.factory_files.support import EXAMPLES
from tests.test_cli import admin, gateway

pytestmark = pytest.mark.slow  # starts processes of its own

EXAMPLE = EXAMPLES / "04-code-review-only"


def apply(tmp_path: Path, *args: str) -> dict[str, Any]:
    result = gateway(tmp_path, "apply", *args)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    value: dict[str, Any] = json.loads(lines[0])
    return value


def automations(tmp_path: Path) -> list[str]:
    with sqlite3.connect(tmp_path / "cli.db") as db:
        return [row[0] for row in db.execute("SELECT name FROM automations ORDER BY name")]


def test_apply_by_team_then_again_with_nothing_to_do(tmp_path: Path) -> None:
    team = admin(tmp_path, "create-team", "--name", "T")["team_uid"]
    first = apply(tmp_path, str(EXAMPLE), "--team", team)
    assert first["factory_uid"].startswith("fac_")
    assert first["changes"] == [
        {"kind": "factory", "name": "code-review-only", "action": "create"},
        {"kind": "runner", "name": "linux-small", "action": "create"},
        {"kind": "agent", "name": "reviewer", "action": "create"},
        {"kind": "automation", "name": "pr-opened", "action": "create"},
    ]
    assert first["webhooks"] == []
    again = apply(tmp_path, str(EXAMPLE), "--team", team)
    assert again == {**first, "changes": []}
    assert apply(tmp_path, str(EXAMPLE), "--factory", first["factory_uid"]) == again


def test_dry_run_prints_the_plan_and_changes_nothing(tmp_path: Path) -> None:
    team = admin(tmp_path, "create-team", "--name", "T")["team_uid"]
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLE, tree)
    planned = apply(tmp_path, str(tree), "--team", team, "--dry-run")
    assert planned["factory_uid"] is None and len(planned["changes"]) == 4
    assert automations(tmp_path) == []
    factory_uid = apply(tmp_path, str(tree), "--team", team)["factory_uid"]
    moved = tree / "automations" / "pr-opened"
    moved.rename(tree / "automations" / "review-prs")
    plan = apply(tmp_path, str(tree), "--factory", factory_uid, "--dry-run")
    assert plan["changes"] == [
        {"kind": "automation", "name": "pr-opened", "action": "delete"},
        {"kind": "automation", "name": "review-prs", "action": "create"},
    ]
    assert automations(tmp_path) == ["pr-opened"]
    assert apply(tmp_path, str(tree), "--factory", factory_uid)["changes"] == plan["changes"]
    assert automations(tmp_path) == ["review-prs"]


def test_a_repository_whose_definition_root_is_a_subdirectory(tmp_path: Path) -> None:
    team = admin(tmp_path, "create-team", "--name", "T")["team_uid"]
    repository = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repository / "deploy" / "factory")
    (repository / "README.md").write_text("# a repository\n")
    applied = apply(tmp_path, str(repository), "--team", team)
    assert applied["changes"][0] == {
        "kind": "factory",
        "name": "code-review-only",
        "action": "create",
    }
    several = gateway(tmp_path, "apply", str(EXAMPLES.parent), "--team", team, check=False)
    assert several.returncode == 1 and several.stdout == ""
    assert (
        "01-single-repo-quickstart" in several.stderr and "07-self-hosted-worker" in several.stderr
    )


def test_problems_go_to_stderr_with_their_place_and_change_nothing(tmp_path: Path) -> None:
    team = admin(tmp_path, "create-team", "--name", "T")["team_uid"]
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLE, tree)
    factory = tree / "factory.yaml"
    factory.write_text(factory.read_text().replace("model: auto", "model: autoo"))
    agent = tree / "agents" / "reviewer" / "agent.md"
    agent.write_text(agent.read_text().replace("agentType: FOREMAN", "agentType: BOSS"))
    result = gateway(tmp_path, "apply", str(tree), "--team", team, check=False)
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("agents/reviewer/agent.md:") and "FF_" in lines[0]
    # what only the server can check is checked once the files are valid: one problem so far
    assert lines[-1] == "gateway apply: 1 problem(s); nothing changed"
    assert automations(tmp_path) == []
    agent.write_text(agent.read_text().replace("agentType: BOSS", "agentType: FOREMAN"))
    result = gateway(tmp_path, "apply", str(tree), "--team", team, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("factory.yaml:11:10: FF_INVALID_REFERENCE: unknown model")
    missing = gateway(tmp_path, "apply", str(tree), "--factory", "fac_nope", check=False)
    assert missing.returncode == 1 and "no factory fac_nope" in missing.stderr
    neither = gateway(tmp_path, "apply", str(tree), check=False)
    assert neither.returncode == 2 and "--team" in neither.stderr
