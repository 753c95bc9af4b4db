"""The official Python client (oz-agent-sdk on PyPI), unchanged, against the server (SQLite and
PostgreSQL): every method of its surface with realistic inputs, asserting on the typed results
it parses. A runner (the protocol, over HTTP) does what a run's worker would in between."""

from __future__ import annotations

import base64
import inspect
import json
from collections.abc import Iterator
from datetime import datetime

import pytest
from oz_agent_sdk import OzAPI
from oz_agent_sdk.types import AgentListResponse, AgentRunResponse
from oz_agent_sdk.types.agent import AgentResponse, RunItem, ScheduledAgentItem

from tests.conftest import make_settings
from tests.platform.runners.test_runner_api import Runner
from tests.platform.runs.official_client import official_client
from tests.support import GatewayClient, World

# every method of the client's surface, as `client.<path>`; test_the_surface_is_all_here checks
# this against the installed client, so a method added there fails here until it is tested
SURFACE = {
    "agent.list", "agent.get_artifact", "agent.list_environments", "agent.run",
    "agent.runs.retrieve", "agent.runs.list", "agent.runs.cancel",
    "agent.runs.list_handoff_attachments", "agent.runs.submit_followup",
    "agent.schedules.create", "agent.schedules.retrieve", "agent.schedules.update",
    "agent.schedules.list", "agent.schedules.delete", "agent.schedules.pause",
    "agent.schedules.resume",
    "agent.agent.create", "agent.agent.update", "agent.agent.list", "agent.agent.delete",
    "agent.agent.get",
    "agent.sessions.check_redirect", "agent.conversations.check_redirect",
}  # fmt: skip
ENVIRONMENTS = [
    {"uid": "web", "name": "Web app", "link_shared": True, "docker_image": "node:22",
     "github_repos": [{"owner": "acme", "repo": "web"}], "setup_commands": ["npm ci"]},
]  # fmt: skip
LOG = b"npm ERR! code ERESOLVE\n"


def _methods(resource: object, prefix: str) -> Iterator[str]:
    for name, value in inspect.getmembers(type(resource)):
        if name.startswith("_") or name.startswith("with_"):
            continue
        if isinstance(value, property) or hasattr(value, "func"):  # sub-resources
            yield from _methods(getattr(resource, name), f"{prefix}.{name}")
        elif inspect.isfunction(value):
            yield f"{prefix}.{name}"


def test_the_surface_is_all_here() -> None:
    client = OzAPI(api_key="k", base_url="http://127.0.0.1:9/api/v1")
    assert set(_methods(client.agent, "agent")) == SURFACE


@pytest.fixture
def world(database_url: str) -> Iterator[World]:
    settings = make_settings(database_url, environments=json.dumps(ENVIRONMENTS))
    with GatewayClient.running(settings) as client:
        yield World.create(client)


def test_agents_skills_and_environments(world: World) -> None:
    client = official_client(world)
    created = client.agent.agent.create(
        name="Reviewer",
        description="Reviews pull requests",
        agent_type="REVIEW",
        base_model="gpt-5",
        environment_id="web",
        prompt="Review for correctness first.",
        skills=["acme/web:.agents/skills/review/SKILL.md"],
        mcp_servers={"docs": {"url": "https://mcp.example.test/docs"}},
        factory_uid=world.factory_uid,
    )
    assert isinstance(created, AgentResponse) and created.available is True
    assert created.skills == ["acme/web:.agents/skills/review/SKILL.md"]
    assert isinstance(created.created_at, datetime)
    assert client.agent.agent.get(created.uid).name == "Reviewer"
    listed = client.agent.agent.list()
    assert created.uid in [agent.uid for agent in listed.agents]
    updated = client.agent.agent.update(created.uid, description="Reviews carefully", skills=[
        "acme/web:.agents/skills/review/SKILL.md", "acme/web:deploy"])  # fmt: skip
    assert updated.description == "Reviews carefully" and len(updated.skills) == 2

    skills = client.agent.list(repo="acme/web", sort_by="name", refresh=True)
    assert isinstance(skills, AgentListResponse)
    assert [skill.name for skill in skills.agents] == ["deploy", "review"]
    review = skills.agents[1].variants[0]
    assert review.id == "acme/web:.agents/skills/review/SKILL.md"
    assert (review.source.owner, review.source.name) == ("acme", "web")
    assert [(env.uid, env.name) for env in review.environments] == [("web", "Web app")]
    assert client.agent.list(include_malformed_skills=True, sort_by="last_run").agents

    environments = client.agent.list_environments(sort_by="name").environments
    web = next(env for env in environments if env.uid == "web")
    assert web.config.docker_image == "node:22"
    assert web.config.github_repos[0].repo == "web"

    client.agent.agent.delete(created.uid)
    assert created.uid not in [agent.uid for agent in client.agent.agent.list().agents]


def test_runs_from_creation_to_handoff(world: World) -> None:
    client = official_client(world)
    started = client.agent.run(
        prompt="Fix the failing install",
        title="Install fails",
        config={"model_id": "gpt-5", "environment_id": "web", "name": "install-fix"},
        mode="plan",
        metadata={"ticket": "WEB-7"},
        attachments=[
            {
                "data": base64.b64encode(LOG).decode(),
                "file_name": "npm.log",
                "mime_type": "text/plain",
            }
        ],
        team=True,
    )
    assert isinstance(started, AgentRunResponse) and started.state == "QUEUED"
    assert started.task_id == started.run_id

    run = client.agent.runs.retrieve(started.run_id)
    assert isinstance(run, RunItem)
    assert (run.title, run.state, run.source) == ("Install fails", "QUEUED", "API")
    assert run.agent_config is not None and run.agent_config.api_model_id == "gpt-5"
    assert run.creator is not None and run.creator.type == "user"
    listed = client.agent.runs.list(state=["QUEUED"], model_id="gpt-5", limit=10)
    assert [item.run_id for item in listed.runs] == [started.run_id]
    assert listed.page_info.has_next_page is False

    queued = client.agent.runs.submit_followup(started.run_id, message="Also check the lockfile.")
    assert queued == {"run_id": started.run_id, "state": "QUEUED", "routing": "queued"}

    runner = Runner(world)
    [claimed] = runner.claim()
    assert claimed["mode"] == "plan"
    assert world.client.get(claimed["attachments"][0]["download_url"]).content == LOG
    runner.on(started.run_id, "progress", state="INPROGRESS", session_id="sess-0001")
    file = runner.on(started.run_id, "artifacts", 201, artifact_type="FILE", filename="fix.patch",
                     mime_type="text/x-diff",
                     content_base64=base64.b64encode(b"--- a\n+++ b\n").decode())  # fmt: skip
    runner.on(started.run_id, "finish", outcome="SUCCEEDED", status_message="Patched")

    done = client.agent.runs.retrieve(started.run_id)
    assert done.state == "SUCCEEDED" and done.session_id == "sess-0001"
    assert done.status_message is not None and done.status_message.message == "Patched"
    handoff = client.agent.runs.list_handoff_attachments(started.run_id)
    assert [(a.attachment_id, a.filename) for a in handoff.attachments] == [
        (file["artifact_uid"], "fix.patch")
    ]
    artifact = client.agent.get_artifact(file["artifact_uid"])
    assert artifact.artifact_uid == file["artifact_uid"]
    assert world.client.get(handoff.attachments[0].download_url).content == b"--- a\n+++ b\n"

    session = client.agent.sessions.check_redirect("sess-0001")
    assert session.conversation_id == done.conversation_id
    assert client.agent.sessions.check_redirect("sess-none").conversation_id is None
    conversation = client.agent.conversations.check_redirect(done.conversation_id or "")
    assert conversation.session_id == "sess-0001"

    again = client.agent.run(prompt="Run the tests", conversation_id=done.conversation_id)
    cancelled = client.agent.runs.cancel(again.run_id)
    assert cancelled == again.run_id  # the bare id, as the client hands it over
    assert client.agent.runs.retrieve(again.run_id).state == "CANCELLED"


def test_scheduled_agents(world: World) -> None:
    client = official_client(world)
    made = client.agent.schedules.create(
        name="Nightly dependency check",
        cron_schedule="0 3 * * *",
        prompt="Check for outdated dependencies.",
        agent_config={"model_id": "gpt-5", "environment_id": "web"},
        enabled=True,
        mode="plan",
        metadata={"owner": "platform"},
    )
    assert isinstance(made, ScheduledAgentItem) and made.enabled is True
    assert made.agent_config is not None and made.agent_config.api_model_id == "gpt-5"
    assert client.agent.schedules.retrieve(made.id).cron_schedule == "0 3 * * *"
    updated = client.agent.schedules.update(
        made.id,
        name="Nightly dependency check",
        cron_schedule="30 2 * * 1-5",
        enabled=True,
        prompt="Check for outdated and vulnerable dependencies.",
    )
    assert updated.cron_schedule == "30 2 * * 1-5"
    assert client.agent.schedules.pause(made.id).enabled is False
    assert client.agent.schedules.resume(made.id).enabled is True
    assert [s.id for s in client.agent.schedules.list().schedules] == [made.id]
    assert client.agent.schedules.delete(made.id).success is True
    assert client.agent.schedules.list().schedules == []
