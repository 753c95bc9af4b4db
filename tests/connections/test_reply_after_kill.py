"""A `gateway serve` SIGKILLed while a run's end is being replied: after the restart the reply
is sent again (once its lease has run out), and the issue has one comment, edited once with the
outcome. The run's end and the reply's message committed together, so nothing is lost."""

from __future__ import annotations

import asyncio
import base64
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from sqlalchemy import update

from gateway.foundation.accounts import factories, identities
from gateway.foundation.services import Services, build_services
from gateway.foundation.store import migrate
from gateway.foundation.store import tables as t
from gateway.kernel.settings import Settings
from gateway.webhook_gateway.automations import management as automations
from gateway.webhook_gateway.automations.models import AutomationCreate
from gateway.webhook_gateway.connections.management import connect
from gateway.webhook_gateway.connections.models import ConnectionCreate
from testbed.procs import free_port
from tests.conftest import make_settings
from tests.connections.test_provider_triggers import labeled_example, octokit_signed
from tests.ingress.hooks import gateway_env, serve_gateway
from tests.providers.conftest import GithubExamples
from tests.replies.github_api import GitHubApi
from tests.replies.stand_in import Answer, Call
from tests.support import eventually, scaled

pytestmark = pytest.mark.slow
ISSUE = "Codertocat/Hello-World#1"


class HeldEdits(GitHubApi):
    """GitHub, whose next comment edit arrives and hangs, unanswered and not applied, until
    `let_go` (by then the gateway that sent it is dead)."""

    def __init__(self) -> None:
        super().__init__(issues={ISSUE}, tokens={"ghp_valid"})
        self.hold = threading.Event()
        self.held = threading.Event()
        self.let_go = threading.Event()

    def handle(self, call: Call) -> Answer:
        if call.method == "PATCH" and self.hold.is_set() and not self.held.is_set():
            with self._lock:
                self.calls.append(call)
            self.held.set()
            self.let_go.wait(60)
            return Answer(502, {"message": "the caller has gone"})
        return super().handle(call)


async def _world(settings: Settings, api_url: str) -> dict[str, str]:
    services: Services = build_services(settings)
    try:
        await migrate(services.database)
        async with services.database.transaction() as conn:
            team = await identities.create_team(conn, "T")
            agent, agent_key = await identities.create_agent(conn, team, "Foreman")
            factory = await factories.create_factory(conn, team, "F", None, agent)
            f = t.factories
            repos = [{"owner": "Codertocat", "name": "Hello-World"}]
            await conn.execute(update(f).where(f.c.uid == factory).values(repositories=repos))
            spec = {"name": "triage", "prompt": "Triage it.", "enabled": True,
                    "triggers": [{"provider": "github", "event": "issue_labeled"}]}  # fmt: skip
            await automations.create_automation(
                conn, factory, msgspec.convert(spec, AutomationCreate)
            )
            made = await connect(
                conn, services, team,
                ConnectionCreate(provider="github", api_token="ghp_valid", api_base_url=api_url),
            )  # fmt: skip
        assert isinstance(made.secret, str)
        return {"agent_key": agent_key, "connection": made.uid, "secret": made.secret}
    finally:
        await services.close()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()  # SIGKILL: no chance to finish the call or release the message
    proc.wait(10)


def test_a_reply_cut_off_by_sigkill_is_sent_once_after_restart(
    tmp_path: Path, github_examples: GithubExamples
) -> None:
    github = HeldEdits()
    values = {
        "database_url": f"sqlite:///{tmp_path}/gw.db",
        "secret_key": base64.urlsafe_b64encode(b"k" * 32).decode(),
        "log_level": "warning",
        "evaluator": "inline",
        "outbound_allow_private": "1",
        "outbound_timeout_s": "2",  # a lease of 7 s
        "reply_retry_s": "0.2",
    }
    with github.serve():
        world = asyncio.run(_world(make_settings(values["database_url"]), github.url))
        env = gateway_env(**values)
        port = free_port()
        server = serve_gateway(env, port, tmp_path / "serve.log")
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
                sent = octokit_signed(
                    world["secret"], "issues", labeled_example(github_examples), "kill-1"
                )
                answer = http.post(
                    f"/webhooks/p/{world['connection']}", content=sent.body, headers=sent.headers
                )
                assert answer.status_code == 202, answer.text
                run_id = _work_until_the_end(http, world["agent_key"], github)
                assert github.held.wait(scaled(30)), "the end's edit never came"
                _kill(server)
            github.let_go.set()
            server = serve_gateway(env, port, tmp_path / "serve.log")
            eventually(
                lambda: "finished" in next(iter(github.comments.values()))["body"],
                timeout=scaled(40),
            )
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
                key = {"Authorization": f"Bearer {world['agent_key']}"}

                def delivered() -> Any:
                    run = http.get(f"/api/v1/agent/runs/{run_id}", headers=key).json()
                    replies = run.get("replies") or []
                    return replies if replies and replies[0]["state"] == "delivered" else None

                (reply,) = eventually(delivered, timeout=scaled(20))
        finally:
            github.let_go.set()
            _kill(server)
    assert len(github.comments) == 1  # one comment, across the kill
    assert len(github.calls_to(r"/repos/.*/issues/1/comments")) == 1
    edits = github.calls_to(r"/repos/.*/issues/comments/\d+")
    assert len(edits) == 2  # the one cut off, and the one after the restart
    assert "Done: one PR." in next(iter(github.comments.values()))["body"]
    assert reply["attempts"] == 2  # the post, the edit after the restart: the lost one left none
    assert re.search(r"issuecomment-\d+$", reply["link"])


def _work_until_the_end(http: httpx.Client, agent_key: str, github: HeldEdits) -> str:
    """A runner claims the delivery's run, waits for its comment, and finishes it with the
    next edit held."""
    key = {"Authorization": f"Bearer {agent_key}"}
    made = http.post("/api/v1/runner/register", headers=key, json={"name": "r"})
    assert made.status_code == 201, made.text
    runner = made.json()["runner_uid"]

    def claimed() -> Any:
        answer = http.post("/api/v1/runner/claim", headers=key,
                           json={"runner_uid": runner, "max_runs": 1, "wait_s": 0})  # fmt: skip
        runs = answer.json()["runs"]
        return runs[0]["run_id"] if runs else None

    run_id: str = eventually(claimed, timeout=scaled(20))
    eventually(lambda: len(github.comments) == 1, timeout=scaled(20))
    github.hold.set()
    finished = http.post(
        f"/api/v1/runner/runs/{run_id}/finish",
        headers=key,
        json={"runner_uid": runner, "outcome": "SUCCEEDED", "status_message": "Done: one PR."},
    )
    assert finished.status_code == 200, finished.text
    return run_id
