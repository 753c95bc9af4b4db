"""Handoff snapshot attachments of a run and the public shared-session redirect lookups."""

from __future__ import annotations

import base64

from tests.platform.runs.official_client import official_client
from tests.platform.runs.runs_support import advance, new_run
from tests.support import World

REGISTER, CLAIM = "/runner/register", "/runner/claim"


def _runner_run(world: World) -> tuple[dict[str, str], str]:
    """A run of the team held by a registered runner of the world's agent (not a dispatched
    one: the task binder may hold its row a moment, and claims skip locked rows)."""
    registered = world.api("POST", REGISTER, headers=world.agent, json={"name": "r"}).json()
    run = new_run(world)
    runner = {"runner_uid": registered["runner_uid"]}
    claimed = world.api("POST", CLAIM, headers=world.agent, json=runner | {"wait_s": 0}).json()
    assert [r["run_id"] for r in claimed["runs"]] == [run["run_id"]]
    return runner, run["run_id"]


def test_handoff_attachments_are_the_files_of_the_last_ended_execution(world: World) -> None:
    runner, run_id = _runner_run(world)
    held = f"/runner/runs/{run_id}"
    path = f"/agent/runs/{run_id}/handoff/attachments"
    file = runner | {"artifact_type": "FILE", "filename": "notes.md", "mime_type": "text/markdown",
                     "content_base64": base64.b64encode(b"# notes").decode()}  # fmt: skip
    uploaded = world.api("POST", f"{held}/artifacts", headers=world.agent, json=file)
    assert uploaded.status_code == 201, uploaded.text
    assert world.api("GET", path).json() == {"attachments": []}  # nothing ended yet
    done = runner | {"outcome": "SUCCEEDED"}
    assert world.api("POST", f"{held}/finish", headers=world.agent, json=done).status_code == 200
    (attachment,) = world.api("GET", path).json()["attachments"]
    assert attachment["attachment_id"] == uploaded.json()["artifact_uid"]
    assert (attachment["filename"], attachment["mime_type"]) == ("notes.md", "text/markdown")
    content = world.client.get(attachment["download_url"])
    assert content.status_code == 200 and content.content == b"# notes"
    assert world.api("GET", path, headers=world.stranger).status_code == 404
    assert world.api("GET", "/agent/runs/missing/handoff/attachments").status_code == 404


def test_session_and_conversation_redirects_are_public(world: World) -> None:
    run = new_run(world)
    advance(
        world, run["run_id"], "claim", "start", session_id="3f1c2b9e-0000-4000-8000-000000000001"
    )
    session = world.client.get(
        "/api/v1/agent/sessions/3f1c2b9e-0000-4000-8000-000000000001/redirect"
    )
    assert session.status_code == 200
    assert session.json() == {"conversation_id": run["conversation_id"]}
    conversation = world.client.get(
        f"/api/v1/agent/conversations/{run['conversation_id']}/redirect"
    )
    assert conversation.json() == {"session_id": "3f1c2b9e-0000-4000-8000-000000000001"}
    assert world.client.get("/api/v1/agent/sessions/unknown/redirect").json() == {}
    assert world.client.get("/api/v1/agent/conversations/unknown/redirect").json() == {}
    no_session = new_run(world)
    path = f"/api/v1/agent/conversations/{no_session['conversation_id']}/redirect"
    assert world.client.get(path).json() == {}


def test_the_official_client_reads_handoffs_and_redirects(world: World) -> None:
    oz = official_client(world)
    run = new_run(world)
    advance(world, run["run_id"], "claim", "start", "succeed", session_id="s-1")
    assert oz.agent.runs.list_handoff_attachments(run["run_id"]).attachments == []
    assert oz.agent.sessions.check_redirect("s-1").conversation_id == run["conversation_id"]
    assert oz.agent.conversations.check_redirect(run["conversation_id"]).session_id == "s-1"
