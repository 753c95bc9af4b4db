"""The CLI as an operator uses it: each admin command prints one JSON object."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest


def gateway(tmp_path: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/cli.db",
        "GATEWAY_SECRET_KEY": base64.urlsafe_b64encode(b"c" * 32).decode(),
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
    result = gateway(tmp_path, "admin", *args)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    value: dict[str, Any] = json.loads(lines[0])
    return value


def test_bootstrap_commands_print_one_json_object(tmp_path: Path) -> None:
    team = admin(tmp_path, "create-team", "--name", "Ops")["team_uid"]
    user = admin(tmp_path, "create-user", "--team", team, "--email", "ops@example.com")
    agent = admin(tmp_path, "create-agent", "--team", team, "--name", "Foreman")
    factory = admin(
        tmp_path,
        "create-factory",
        "--team",
        team,
        "--name",
        "F",
        "--alias",
        "f",
        "--foreman",
        agent["agent_uid"],
    )
    secret = admin(
        tmp_path, "set-secret", "--team", team, "--name", "gh", "--value", "s3cret-value"
    )
    assert user["api_key"].startswith("gk_") and agent["api_key"].startswith("gk_")
    assert factory["uid"].startswith("fac_")
    assert secret == {"name": "gh"}

    db = sqlite3.connect(tmp_path / "cli.db")
    stored = [row[0] for row in db.execute("SELECT key_hash FROM api_keys")]
    secrets = [row[0] for row in db.execute("SELECT value_encrypted FROM team_secrets")]
    db.close()
    assert user["api_key"] not in stored and len(stored) == 2  # only hashes are kept
    assert all("s3cret-value" not in value for value in secrets)


def test_demo_creates_everything(tmp_path: Path) -> None:
    demo = admin(tmp_path, "demo")
    assert set(demo) >= {
        "team_uid",
        "user_uid",
        "user_api_key",
        "agent_uid",
        "agent_api_key",
        "factory_uid",
    }


@pytest.mark.parametrize(
    "args",
    [
        ("admin", "create-user", "--team", "team_missing", "--email", "a@b.c"),
        ("admin", "create-factory", "--team", "team_missing", "--name", "F"),
    ],
)
def test_errors_go_to_stderr_with_nonzero_exit(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = gateway(tmp_path, *args, check=False)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "team" in result.stderr


def test_configuration_errors_name_the_variable(tmp_path: Path) -> None:
    env = {**os.environ, "GATEWAY_ROLE": "sideways"}
    result = subprocess.run(
        [sys.executable, "-m", "gateway", "admin", "demo"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "GATEWAY_ROLE" in result.stderr


def test_serve_refuses_workers_without_redis(tmp_path: Path) -> None:
    result = gateway(tmp_path, "serve", "--workers", "2", check=False)
    assert result.returncode == 2
    assert "GATEWAY_REDIS_URL" in result.stderr


def test_set_foreman_hands_a_factory_to_another_agent_or_none(tmp_path: Path) -> None:
    demo = admin(tmp_path, "demo")
    other = admin(tmp_path, "create-agent", "--team", demo["team_uid"], "--name", "Next")
    factory = demo["factory_uid"]
    moved = admin(tmp_path, "set-foreman", "--factory", factory, "--agent", other["agent_uid"])
    assert moved == {"uid": factory, "foreman_agent_uid": other["agent_uid"]}
    assert admin(tmp_path, "set-foreman", "--factory", factory)["foreman_agent_uid"] is None
    db = sqlite3.connect(tmp_path / "cli.db")
    stored = db.execute("SELECT foreman_agent_uid FROM factories WHERE uid = ?", (factory,))
    assert stored.fetchone() == (None,)
    db.close()
    stranger_team = admin(tmp_path, "create-team", "--name", "Other")["team_uid"]
    stranger = admin(tmp_path, "create-agent", "--team", stranger_team, "--name", "S")
    refused = gateway(
        tmp_path, "admin", "set-foreman", "--factory", factory, "--agent", stranger["agent_uid"],
        check=False,
    )  # fmt: skip
    assert refused.returncode == 1 and refused.stderr.startswith("gateway admin: agent:")


def test_version_and_help_list_what_there_is(tmp_path: Path) -> None:
    assert gateway(tmp_path, "--version").stdout.strip() == "gateway 0.1.0"
    listed = gateway(tmp_path, "admin", "--help").stdout
    for command in ("create-team", "create-user", "create-agent", "create-factory",
                    "set-foreman", "set-secret", "demo"):  # fmt: skip
        assert command in listed
    options = gateway(tmp_path, "admin", "create-factory", "--help").stdout
    assert "--foreman FOREMAN  uid of the agent that executes dispatched work (optional)" in options
    assert "port to listen on (8000)" in gateway(tmp_path, "serve", "--help").stdout


def test_demo_prints_export_lines_for_a_shell(tmp_path: Path) -> None:
    lines = gateway(tmp_path, "admin", "demo", "--format", "env").stdout.splitlines()
    assert {line.split("=", 1)[0] for line in lines} >= {
        "export TEAM_UID", "export USER_API_KEY", "export AGENT_API_KEY", "export FACTORY_UID"
    }  # fmt: skip
    shell = subprocess.run(["sh", "-c", "\n".join(lines) + '\necho "$FACTORY_UID"'],
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert shell.stdout.strip().startswith("fac")


def test_serve_hands_out_ingress_urls_on_its_own_port(tmp_path: Path) -> None:
    from benchmarks.procs import free_port
    from tests.ingress.hooks import gateway_env, serve_gateway

    env = gateway_env(
        database_url=f"sqlite:///{tmp_path}/cli.db",
        secret_key=base64.urlsafe_b64encode(b"c" * 32).decode(),
    )
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


def test_an_unreachable_redis_or_store_at_start_is_one_line_and_a_failed_exit(
    tmp_path: Path,
) -> None:
    from benchmarks.procs import free_port

    closed = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    cases = (
        ("serve", {"GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/g.db",
                   "GATEWAY_REDIS_URL": f"redis://:hunter2@127.0.0.1:{closed}"}),
        ("worker", {"GATEWAY_DATABASE_URL": f"postgresql://u:hunter2@127.0.0.1:{closed}/x"}),
    )  # fmt: skip
    for command, settings in cases:
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "gateway", command], env=env | settings,
                              capture_output=True, text=True, timeout=30)  # fmt: skip
        assert time.monotonic() - started < 10.0
        assert done.returncode == 1
        (line,) = done.stderr.splitlines()
        assert line.startswith("gateway: cannot start: ") and f"127.0.0.1:{closed}" in line
        assert "hunter2" not in line and ":***@" in line


def test_connect_prints_the_connection_and_its_secret_once(tmp_path: Path) -> None:
    team = admin(tmp_path, "create-team", "--name", "Ops")["team_uid"]
    github = admin(tmp_path, "connect", "github", "--team", team, "--name", "Acme GitHub")
    assert set(github) == {"uid", "provider", "name", "ingress_url", "enabled", "created_at",
                           "secret"}  # fmt: skip
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
