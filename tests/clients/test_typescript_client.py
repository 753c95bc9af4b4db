"""The official TypeScript client (oz-agent-sdk on npm, from the tests' npm packages), unchanged,
against `gateway serve` (a real process; SQLite and PostgreSQL): tests/clients/typescript_client.mjs
drives every method of its surface with node and asserts on what it parses; this side serves the
gateway, makes the team, and checks what the script reports and what the server holds."""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from testbed.procs import free_port
from tests.ingress.hooks import gateway_env, serve_gateway, stop_gateway
from tests.npm_packages import node

pytestmark = pytest.mark.slow  # starts processes of its own

SCRIPT = Path(__file__).with_name("typescript_client.mjs")
ENVIRONMENTS = [
    {"uid": "web", "name": "Web app", "link_shared": True,
     "github_repos": [{"owner": "acme", "repo": "web"}]},
]  # fmt: skip


@dataclass
class Served:
    api: str
    team_uid: str
    user_key: str

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.user_key}", "X-Service-Team-Uid": self.team_uid}
        answer = httpx.request(method, f"{self.api}{path}", headers=headers, timeout=10, **kwargs)
        assert answer.status_code < 300, answer.text
        return answer.json()


def _admin(env: dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "admin", *args],
        env=env,
        capture_output=True,
        check=True,
        timeout=60,
    )
    return json.loads(done.stdout)


@pytest.fixture
def served(database_url: str, tmp_path: Path) -> Iterator[Served]:
    port = free_port()
    env = gateway_env(
        database_url=database_url,
        webhook_base_url=f"http://127.0.0.1:{port}",
        secret_key=base64.urlsafe_b64encode(b"t" * 32).decode(),
        environments=json.dumps(ENVIRONMENTS),
        evaluator="inline",
        log_level="warning",
    )
    team = _admin(env, "create-team", "--name", "TypeScript client")["team_uid"]
    email = f"ts-{secrets.token_hex(4)}@example.com"  # in this team alone
    user = _admin(env, "create-user", "--team", team, "--email", email)
    server = serve_gateway(env, port, tmp_path / "server.log")
    try:
        yield Served(f"http://127.0.0.1:{port}/api/v1", team, user["api_key"])
    finally:
        stop_gateway(server)


def test_every_method_of_the_typescript_client(served: Served) -> None:
    skills = ["acme/web:.agents/skills/review/SKILL.md", "acme/web:deploy"]
    served.call("POST", "/agent/identities", json={"name": "Web agent", "skills": skills})
    done = subprocess.run(
        [node(), str(SCRIPT)],
        env={
            "OZ_API_BASE_URL": served.api,
            "WARP_API_KEY": served.user_key,
            "TEAM_UID": served.team_uid,
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"node failed ({done.returncode}):\n{done.stderr}\n{done.stdout}"
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["skills"] == ["deploy", "review"]
    run = seen["run"]
    # the image it sent is the run's attachment, listed as a FILE, its content stored
    [image] = run["artifacts"]
    assert image["artifact_type"] == "FILE"
    assert (image["data"]["filename"], image["data"]["mime_type"]) == ("image-1.png", "image/png")
    assert image["data"]["size_bytes"] == 16
    details = served.call("GET", f"/agent/artifacts/{image['data']['artifact_uid']}")
    assert details["data"]["size_bytes"] == 16 and details["data"]["download_url"]
    stored = served.call("GET", f"/agent/runs/{run['run_id']}")
    assert stored["title"] == "Landing page speed" and stored["state"] == "QUEUED"
    assert served.call("GET", "/agent/schedules")["schedules"] == []
