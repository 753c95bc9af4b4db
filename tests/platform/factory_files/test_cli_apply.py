"""`gateway apply DIR [--team T | --factory UID] [--dry-run] [--json]`: the plan it carried out
(as a person reads it, or one JSON object); a repository whose definition root is a
subdirectory; problems on standard error, nothing changed; a database that is not there
refused; `--server URL`: the tree posted to a running gateway."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from testbed.procs import free_port
from tests.ingress.hooks import gateway_env, serve_gateway
from tests.platform.factory_files.support import EXAMPLES
from tests.support import CLI_SECRET_KEY
from tests.test_cli import admin, gateway

pytestmark = pytest.mark.slow  # starts processes of its own

EXAMPLE = EXAMPLES / "04-code-review-only"


def apply(tmp_path: Path, *args: str) -> dict[str, Any]:
    result = gateway(tmp_path, "apply", *args, "--json")
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
    strict = {"GATEWAY_STRICT_MODEL_CATALOGUE": "1"}
    result = gateway(tmp_path, "apply", str(tree), "--team", team, check=False, env=strict)
    assert result.returncode == 1
    assert result.stderr.startswith("factory.yaml:11:10: FF_INVALID_REFERENCE: unknown model")
    assert automations(tmp_path) == []
    # by default a model outside the catalogue is a warning: applied, said on stderr
    result = gateway(tmp_path, "apply", str(tree), "--team", team, "--json", check=False)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("warning: factory.yaml:11:10: FF_UNLISTED_MODEL: model 'autoo'")
    assert json.loads(result.stdout)["warnings"][0]["code"] == "FF_UNLISTED_MODEL"
    assert automations(tmp_path) == ["pr-opened"]
    missing = gateway(tmp_path, "apply", str(tree), "--factory", "fac_nope", check=False)
    assert missing.returncode == 1 and "no factory fac_nope" in missing.stderr
    neither = gateway(tmp_path, "apply", str(tree), check=False)
    assert neither.returncode == 2 and "--team" in neither.stderr


def test_the_plan_reads_as_changes_and_a_summary(tmp_path: Path) -> None:
    team = admin(tmp_path, "create-team", "--name", "T")["team_uid"]
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLE, tree)
    planned = gateway(tmp_path, "apply", str(tree), "--team", team, "--dry-run").stdout
    assert planned.splitlines() == [
        "Plan for a new factory:",
        "  + create factory code-review-only",
        "  + create runner linux-small",
        "  + create agent reviewer",
        "  + create automation pr-opened",
        "Plan: 4 to create, 0 to update, 0 to delete (nothing changed).",
    ]
    applied = gateway(tmp_path, "apply", str(tree), "--team", team).stdout.splitlines()
    assert applied[0].startswith("Applied to fac_") and applied[-1] == (
        "Applied: 4 created, 0 updated, 0 deleted."
    )
    automation = tree / "automations" / "pr-opened" / "automation.md"
    automation.write_text(automation.read_text() + "\nAlso check the tests.\n")
    (tree / "automations" / "pr-opened").rename(tree / "automations" / "review-prs")
    changed = gateway(tmp_path, "apply", str(tree), "--team", team, "--dry-run").stdout
    assert "  - delete automation pr-opened" in changed.splitlines()
    assert "  + create automation review-prs" in changed.splitlines()
    assert "\033[" not in changed  # not a terminal: no colour
    factory = tree / "factory.yaml"
    factory.write_text(factory.read_text().replace("alias: Reviewer", "alias: Reviews"))
    updated = gateway(tmp_path, "apply", str(tree), "--team", team, "--dry-run").stdout
    assert "  ~ update factory code-review-only (alias)" in updated.splitlines(), updated
    assert updated.splitlines()[-1] == (
        "Plan: 1 to create, 1 to update, 1 to delete (nothing changed)."
    )


def test_the_plan_is_coloured_on_a_terminal_unless_no_color(tmp_path: Path) -> None:
    import os
    import pty
    import subprocess
    import sys

    team = admin(tmp_path, "create-team", "--name", "T")["team_uid"]

    def on_a_terminal(**extra: str) -> str:
        leader, follower = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        env |= {"GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/cli.db", "TERM": "xterm", **extra}
        env |= {"GATEWAY_SECRET_KEY": CLI_SECRET_KEY}
        proc = subprocess.run(
            [sys.executable, "-m", "gateway", "apply", str(EXAMPLE), "--team", team, "--dry-run"],
            env=env, cwd=tmp_path, stdout=follower, stderr=subprocess.PIPE, timeout=60,
        )  # fmt: skip
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed
                break
            if not chunk:
                break
            out += chunk
        os.close(leader)
        assert proc.returncode == 0, proc.stderr
        return out.decode()

    assert "\033[32m+\033[0m create factory" in on_a_terminal()
    plain = on_a_terminal(NO_COLOR="1")
    assert "\033[" not in plain and "  + create factory code-review-only" in plain


def test_a_database_that_is_not_there_is_refused_naming_it(tmp_path: Path) -> None:
    """Run from another directory than the server's, the default database (./data/gateway.db)
    is not there: the command says where it looked and how to point it at the server's, and
    creates nothing."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = gateway_env()  # as a newcomer has it: no variable set, no secret key
    for args in (
        ("apply", str(EXAMPLE), "--team", "team_x"),
        ("admin", "create-user", "--team", "team_x", "--email", "a@example.com"),
        ("admin", "set-secret", "--team", "team_x", "--name", "n", "--value", "v"),
    ):
        result = run_gateway(env, elsewhere, *args)
        assert result.returncode == 2 and result.stdout == "", result
        expected = elsewhere / "data" / "gateway.db"
        assert f"no database at {expected}" in result.stderr
        assert "GATEWAY_DATABASE_URL" in result.stderr
        assert list(elsewhere.iterdir()) == []  # nothing was created
    assert (
        "--server URL" in run_gateway(env, elsewhere, "apply", str(EXAMPLE), "--team", "t").stderr
    )
    # the first steps may start a database, and say where
    made = run_gateway(env, elsewhere, "admin", "create-team", "--name", "T")
    assert made.returncode == 0 and str(elsewhere / "data" / "gateway.db") in made.stderr
    # a database that is there but has no such team: the message names the database
    missing = run_gateway(env, elsewhere, "apply", str(EXAMPLE), "--team", "team_nope")
    assert missing.returncode == 1
    assert "team_nope does not exist" in missing.stderr
    assert str(elsewhere / "data" / "gateway.db") in missing.stderr


def test_apply_to_a_running_gateway_with_server(
    tmp_path: Path, sqlite_store: Callable[..., str]
) -> None:
    port = free_port()
    env = gateway_env(
        database_url=sqlite_store("gateway.db"),
        secret_key=CLI_SECRET_KEY,
        webhook_base_url=f"http://127.0.0.1:{port}",
        log_level="warning",
    )
    keys = json.loads(run_gateway(env, tmp_path, "admin", "demo").stdout)
    server = serve_gateway(env, port, tmp_path / "server.log")
    url = f"http://127.0.0.1:{port}"
    try:
        elsewhere = tmp_path / "ci"
        repository = elsewhere / "repo"
        shutil.copytree(EXAMPLE, repository / "deploy" / "factory")
        client = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
        no_key = run_gateway(client, elsewhere, "apply", str(repository), "--server", url)
        assert no_key.returncode == 2 and "GATEWAY_API_KEY" in no_key.stderr
        client["GATEWAY_API_KEY"] = keys["user_api_key"]
        planned = run_gateway(client, elsewhere, "apply", str(repository), "--server", url,
                              "--dry-run", "--json")  # fmt: skip
        assert planned.returncode == 0, planned.stderr
        assert json.loads(planned.stdout)["factory_uid"] is None
        applied = run_gateway(client, elsewhere, "apply", str(repository), "--server", url)
        assert applied.returncode == 0, applied.stderr
        assert applied.stdout.splitlines()[-1] == "Applied: 4 created, 0 updated, 0 deleted."
        assert not (elsewhere / "data").exists()  # no database of its own
        listed = httpx.get(
            f"{url}/api/v1/factory",
            headers={"Authorization": f"Bearer {keys['user_api_key']}"},
            timeout=10,
        ).json()
        assert "code-review-only" in json.dumps(listed)
        again = run_gateway(client, elsewhere, "apply", str(repository), "--server", url,
                            "--team", keys["team_uid"])  # fmt: skip
        assert again.stdout.startswith("No changes: fac_"), again
        # the tree's problems come back as the server's diagnostics, on standard error
        factory = repository / "deploy" / "factory" / "factory.yaml"
        # (not a model id at all: an unlisted well-formed one would be a warning)
        factory.write_text(factory.read_text().replace("model: auto", "model: auto!"))
        refused = run_gateway(client, elsewhere, "apply", str(repository), "--server", url)
        assert refused.returncode == 1 and refused.stdout == ""
        assert refused.stderr.startswith(
            "deploy/factory/factory.yaml:11:10: FF_INVALID_REFERENCE: "
        ), refused.stderr
        assert refused.stderr.endswith("gateway apply: 1 problem(s); nothing changed\n")
        client["GATEWAY_API_KEY"] = "gk_wrong"
        unauthorized = run_gateway(client, elsewhere, "apply", str(repository), "--server", url)
        assert unauthorized.returncode == 1 and "401" in unauthorized.stderr
    finally:
        server.terminate()
        server.wait(30)


def run_gateway(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
