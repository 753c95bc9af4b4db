"""The official clients' snippets of docs/getting-started.md ("The official clients"), run as
written against `gateway serve` (a real process): the Python one with the installed
oz-agent-sdk, the TypeScript one with node and the tests' npm packages; both from the
environment the docs set (OZ_API_BASE_URL, WARP_API_KEY)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from testbed.procs import free_port
from tests.ingress.hooks import gateway_env, serve_gateway, stop_gateway
from tests.npm_packages import node, node_modules

pytestmark = pytest.mark.slow  # starts processes of its own

DOCS = Path(__file__).resolve().parents[2] / "docs" / "getting-started.md"


def snippet(language: str) -> str:
    """The code block under `<!-- client-snippet: language -->`."""
    found = re.search(
        rf"<!-- client-snippet: {language} -->\n```\w+\n(.*?)```", DOCS.read_text(), re.S
    )
    assert found, f"docs/getting-started.md has no {language} client snippet"
    return found.group(1)


@pytest.fixture
def served(tmp_path: Path, sqlite_store: Callable[..., str]) -> Iterator[dict[str, str]]:
    """A served gateway on the embedded defaults, its demo user's key, as the docs have it."""
    port = free_port()
    env = gateway_env(
        database_url=sqlite_store("gateway.db"),
        webhook_base_url=f"http://127.0.0.1:{port}",
        secret_key=base64.urlsafe_b64encode(b"d" * 32).decode(),
        log_level="warning",
    )
    demo = subprocess.run(
        [sys.executable, "-m", "gateway", "admin", "demo"],
        env=env, capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    keys = json.loads(demo.stdout)
    server = serve_gateway(env, port, tmp_path / "server.log")
    try:
        yield {
            "OZ_API_BASE_URL": f"http://127.0.0.1:{port}/api/v1",
            "WARP_API_KEY": keys["user_api_key"],
            "PATH": "/usr/bin:/bin",
        }
    finally:
        stop_gateway(server)


def _state(env: dict[str, str], run_id: str) -> str:
    answer = httpx.get(
        f"{env['OZ_API_BASE_URL']}/agent/runs/{run_id}",
        headers={"Authorization": f"Bearer {env['WARP_API_KEY']}"},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    state: str = answer.json()["state"]
    return state


def test_the_python_and_typescript_snippets_run_as_written(
    served: dict[str, str], tmp_path: Path
) -> None:
    python = subprocess.run(
        [sys.executable, "-c", snippet("python")],
        env=served, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert python.returncode == 0, python.stderr
    run_id, state = python.stdout.splitlines()[0].split()
    assert state == "QUEUED"
    assert python.stdout.splitlines()[1] == "[]"  # the demo team offers no skill yet
    assert _state(served, run_id) == "QUEUED"

    script = tmp_path / "client.mjs"
    script.write_text(snippet("typescript"))
    (tmp_path / "node_modules").symlink_to(node_modules())
    typescript = subprocess.run(
        [node(), str(script)],
        env=served, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert typescript.returncode == 0, typescript.stderr
    ts_run, ts_state = typescript.stdout.split()
    assert ts_run != run_id and ts_state == "QUEUED"
    assert _state(served, ts_run) == "QUEUED"
