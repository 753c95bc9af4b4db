"""The CLI as an operator uses it: each admin command prints one JSON object. The commands run
in this process (`gateway.composition.cli.main`, as `python -m gateway` calls it, ~2 s less a
command); `python -m gateway` itself starts in the tests of --version, the shell exports and
`serve`."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import CLI_SECRET_KEY as SECRET_KEY
from tests.support import Cli


def gateway(
    tmp_path: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m gateway ...` in a process of its own, on tmp_path/cli.db (`env`: variables
    set besides)."""
    env = {
        **os.environ,
        "GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/cli.db",
        "GATEWAY_SECRET_KEY": SECRET_KEY,
        **(env or {}),
    }
    env.pop("GATEWAY_REDIS_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=check,
    )


def admin(tmp_path: Path, *args: str) -> dict[str, Any]:
    """`python -m gateway admin ...` in a process of its own: for tests of what another process
    sees of the change."""
    result = gateway(tmp_path, "admin", *args)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    value: dict[str, Any] = json.loads(lines[0])
    return value


def test_bootstrap_commands_print_one_json_object(cli: Cli) -> None:
    team = cli.admin("create-team", "--name", "Ops")["team_uid"]
    user = cli.admin("create-user", "--team", team, "--email", "ops@example.com")
    agent = cli.admin("create-agent", "--team", team, "--name", "Foreman")
    factory = cli.admin(
        "create-factory", "--team", team, "--name", "F", "--alias", "f",
        "--foreman", agent["agent_uid"],
    )  # fmt: skip
    secret = cli.admin("set-secret", "--team", team, "--name", "gh", "--value", "s3cret-value")
    assert user["api_key"].startswith("gk_") and agent["api_key"].startswith("gk_")
    assert factory["uid"].startswith("fac_")
    assert secret == {"name": "gh"}

    db = sqlite3.connect(cli.store)
    stored = [row[0] for row in db.execute("SELECT key_hash FROM api_keys")]
    secrets = [row[0] for row in db.execute("SELECT value_encrypted FROM team_secrets")]
    db.close()
    assert user["api_key"] not in stored and len(stored) == 2  # only hashes are kept
    assert all("s3cret-value" not in value for value in secrets)


def test_demo_creates_everything(cli: Cli) -> None:
    demo = cli.admin("demo")
    assert set(demo) >= {
        "team_uid",
        "user_uid",
        "user_api_key",
        "agent_uid",
        "agent_api_key",
        "factory_uid",
    }


def test_a_second_demo_reuses_the_demo_team_and_says_so(cli: Cli) -> None:
    """The demo user stays in one team, so plan and apply need no X-Service-Team-Uid; the new
    keys work beside the old ones."""
    first = cli.admin("demo")
    code, out, err = cli.run("admin", "demo")
    assert code == 0, err
    second = json.loads(out)
    kept = ("team_uid", "user_uid", "agent_uid", "factory_uid")
    assert {k: second[k] for k in kept} == {k: first[k] for k in kept}
    assert second["user_api_key"] != first["user_api_key"]
    assert f"the demo team {first['team_uid']} exists already" in err and "reused" in err
    db = sqlite3.connect(cli.store)
    teams = db.execute("SELECT count(*) FROM teams").fetchone()[0]
    memberships = db.execute(
        "SELECT count(*) FROM team_members WHERE user_uid = ?", (first["user_uid"],)
    ).fetchone()[0]
    keys = db.execute("SELECT count(*) FROM api_keys").fetchone()[0]
    db.close()
    assert (teams, memberships, keys) == (1, 1, 4)


@pytest.mark.parametrize(
    "args",
    [
        ("admin", "create-user", "--team", "team_missing", "--email", "a@b.c"),
        ("admin", "create-factory", "--team", "team_missing", "--name", "F"),
    ],
)
def test_errors_go_to_stderr_with_nonzero_exit(cli: Cli, args: tuple[str, ...]) -> None:
    code, out, err = cli.run(*args)
    assert code == 1
    assert out == ""
    assert "team" in err


def test_configuration_errors_name_the_variable(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_ROLE", "sideways")
    code, _, err = cli.run("admin", "demo")
    assert code == 2
    assert "GATEWAY_ROLE" in err


def test_serve_refuses_workers_without_redis(cli: Cli) -> None:
    code, _, err = cli.run("serve", "--workers", "2")
    assert code == 2
    assert "GATEWAY_REDIS_URL" in err


def test_set_foreman_hands_a_factory_to_another_agent_or_none(cli: Cli) -> None:
    demo = cli.admin("demo")
    other = cli.admin("create-agent", "--team", demo["team_uid"], "--name", "Next")
    factory = demo["factory_uid"]
    moved = cli.admin("set-foreman", "--factory", factory, "--agent", other["agent_uid"])
    assert moved == {"uid": factory, "foreman_agent_uid": other["agent_uid"]}
    assert cli.admin("set-foreman", "--factory", factory)["foreman_agent_uid"] is None
    db = sqlite3.connect(cli.store)
    stored = db.execute("SELECT foreman_agent_uid FROM factories WHERE uid = ?", (factory,))
    assert stored.fetchone() == (None,)
    db.close()
    stranger_team = cli.admin("create-team", "--name", "Other")["team_uid"]
    stranger = cli.admin("create-agent", "--team", stranger_team, "--name", "S")
    code, _, err = cli.run(
        "admin", "set-foreman", "--factory", factory, "--agent", stranger["agent_uid"]
    )
    assert code == 1 and err.startswith("gateway admin: agent:")


@pytest.mark.slow  # starts processes of its own
def test_version_and_help_list_what_there_is(cli: Cli, tmp_path: Path) -> None:
    assert gateway(tmp_path, "--version").stdout.strip() == "gateway 0.1.0"
    listed = cli.run("admin", "--help")[1]
    for command in ("create-team", "create-user", "create-agent", "create-factory",
                    "set-foreman", "set-secret", "demo"):  # fmt: skip
        assert command in listed
    options = cli.run("admin", "create-factory", "--help")[1]
    assert "--foreman FOREMAN  uid of the agent that executes dispatched work (optional)" in options
    assert "port to listen on (8000)" in cli.run("serve", "--help")[1]


@pytest.mark.slow  # starts processes of its own
def test_demo_prints_export_lines_for_a_shell(tmp_path: Path) -> None:
    lines = gateway(tmp_path, "admin", "demo", "--format", "env").stdout.splitlines()
    assert {line.split("=", 1)[0] for line in lines} >= {
        "export TEAM_UID", "export USER_API_KEY", "export AGENT_API_KEY", "export FACTORY_UID"
    }  # fmt: skip
    shell = subprocess.run(["sh", "-c", "\n".join(lines) + '\necho "$FACTORY_UID"'],
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert shell.stdout.strip().startswith("fac")


@pytest.mark.slow  # starts processes of its own
def test_serve_hands_out_ingress_urls_on_its_own_port(sqlite_store: Callable[..., str]) -> None:
    from testbed.procs import free_port
    from tests.ingress.hooks import gateway_env, serve_gateway

    env = gateway_env(database_url=sqlite_store("cli.db"), secret_key=SECRET_KEY)
    keys = json.loads(subprocess.run([sys.executable, "-m", "gateway", "admin", "demo"],
                                     env=env, capture_output=True, check=True).stdout)  # fmt: skip
    port = free_port()
    server = serve_gateway(env, port)
    try:
        import httpx

        hook = httpx.post(
            f"http://127.0.0.1:{port}/api/v1/factory/{keys['factory_uid']}/webhooks",
            headers={"Authorization": f"Bearer {keys['user_api_key']}"},
            json={"name": "h"},
        ).json()
        assert hook["ingress_url"].startswith(f"http://127.0.0.1:{port}/webhooks/w/")
    finally:
        server.terminate()
        server.wait(30)
    warned = subprocess.run(
        [sys.executable, "-m", "gateway", "serve", "--port", str(free_port()), "--workers", "2"],
        env=env | {"GATEWAY_WEBHOOK_BASE_URL": "http://127.0.0.1:9"},
        capture_output=True,
        text=True,
        timeout=60,
    )  # refused (2 workers need Redis) right after the check
    assert "names this machine on another port" in warned.stderr


@pytest.mark.slow  # starts processes of its own
def test_an_unreachable_redis_or_store_at_start_is_one_line_and_a_failed_exit(
    tmp_path: Path,
) -> None:
    from testbed.procs import free_port

    closed = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    cases = (
        ("serve", {"GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/g.db",
                   "GATEWAY_REDIS_URL": f"redis://:hunter2@127.0.0.1:{closed}"}),
        ("worker", {"GATEWAY_DATABASE_URL": f"postgresql://u:hunter2@127.0.0.1:{closed}/x"}),
    )  # fmt: skip
    # both at once: each tries what it cannot reach for a few seconds, then gives up
    started = [
        subprocess.Popen([sys.executable, "-m", "gateway", command], env=env | settings,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for command, settings in cases
    ]  # fmt: skip
    for process in started:
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 1
        # at once: what failed and that it is tried again; at the end: that it never answered
        trying, line = stderr.splitlines()
        assert trying.startswith("gateway: ") and trying.endswith(": trying again for up to 5 s")
        assert line.startswith("gateway: cannot start: ") and f"127.0.0.1:{closed}" in line
        for said in (trying, line):
            assert "hunter2" not in said and ":***@" in said


@pytest.mark.slow  # starts processes of its own
def test_a_redis_that_does_not_answer_is_announced_while_it_is_waited_for(
    tmp_path: Path,
) -> None:
    """A Redis address that takes connections but never answers (as one behind a firewall
    that drops packets answers nothing): the wait is said as it begins, not only at its end."""
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    env |= {"GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/g.db",
            "GATEWAY_REDIS_URL": f"redis://127.0.0.1:{port}"}  # fmt: skip
    try:
        with subprocess.Popen([sys.executable, "-m", "gateway", "serve"], env=env,
                              stderr=subprocess.PIPE, text=True) as proc:  # fmt: skip
            assert proc.stderr is not None
            first = proc.stderr.readline()
            assert proc.poll() is None  # still waiting while it says so
            rest = proc.stderr.read().splitlines()
            assert proc.wait(30) == 1
    finally:
        silent.close()
    # the store answered at once: only Redis is waited for
    assert first.rstrip("\n") == (
        f"gateway: waiting for redis at redis://127.0.0.1:{port} to answer (for up to 5 s)"
    )
    (line,) = rest
    assert line.startswith("gateway: cannot start: redis: no answer within 2 s")


@pytest.mark.slow  # starts processes of its own
def test_connect_prints_the_connection_and_its_secret_once(tmp_path: Path) -> None:
    team = admin(tmp_path, "create-team", "--name", "Ops")["team_uid"]
    github = admin(tmp_path, "connect", "github", "--team", team, "--name", "Acme GitHub")
    assert set(github) == {"uid", "provider", "name", "ingress_url", "enabled", "created_at",
                           "secret", "replies"}  # fmt: skip
    assert github["replies"] is False  # no reply credentials: it only receives
    assert github["provider"] == "github" and github["name"] == "Acme GitHub"
    assert github["ingress_url"].endswith(f"/webhooks/p/{github['uid']}")
    assert github["secret"].startswith("pcs_")
    # Slack issues its own signing secret: kept as a team secret, named here, never printed
    admin(tmp_path, "set-secret", "--team", team, "--name", "slack", "--value", "8f74abc")
    slack = admin(tmp_path, "connect", "slack", "--team", team, "--secret-name", "slack")
    assert slack["secret"] is None and slack["secret_name"] == "slack"
    assert slack["name"] == "Slack"
    db = sqlite3.connect(tmp_path / "cli.db")
    stored = [row[0] for row in db.execute("SELECT secret_encrypted FROM provider_connections")]
    db.close()
    assert github["secret"] not in str(stored)
    refused = gateway(tmp_path, "admin", "connect", "teams", "--team", team, check=False)
    assert refused.returncode == 2 and "invalid choice" in refused.stderr
    missing = gateway(tmp_path, "admin", "connect", "jira", "--team", "team_x", check=False)
    assert missing.returncode == 1 and missing.stderr.startswith("gateway admin: team:")
