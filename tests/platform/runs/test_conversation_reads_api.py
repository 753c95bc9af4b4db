"""What runs said, read back: a run's and a conversation's normalized messages, a
conversation's transcript, the run a PR URL belongs to, the team's skills. SQLite and
PostgreSQL."""

from __future__ import annotations

from tests.platform.runners.test_runner_api import Runner, new_run
from tests.support import World


def test_a_run_s_conversation_normalized(world: World) -> None:
    run_id = new_run(world, "fix the build")
    followups = f"/agent/runs/{run_id}/followups"
    assert (
        world.api("POST", followups, json={"message": "start with CI", "mode": "plan"}).status_code
        == 200
    )
    runner = Runner(world)
    runner.claim()
    runner.on(run_id, "progress", state="INPROGRESS")
    said = [{"role": "agent", "text": "on it"}, {"role": "tool", "text": "ran make"}]
    runner.on(run_id, "messages", messages=said)
    assert world.api("POST", followups, json={"message": "and the docs"}).status_code == 200

    answer = world.api("GET", f"/agent/runs/{run_id}/conversation", headers=world.agent)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["run_id"] == run_id and body["conversation_id"]
    assert [
        (m["role"], m["kind"], m["text"], m["routing"], m["mode"]) for m in body["messages"]
    ] == [
        ("user", "prompt", "fix the build", None, None),
        ("user", "follow_up", "start with CI", "queued", "plan"),
        ("agent", "message", "on it", None, None),
        ("tool", "message", "ran make", None, None),
        ("user", "follow_up", "and the docs", "injected", None),
    ]
    assert (
        world.api("GET", f"/agent/runs/{run_id}/conversation", headers=world.stranger).status_code
        == 404
    )
    assert world.api("GET", "/agent/runs/nope/conversation").status_code == 404


def test_a_conversation_normalized_and_its_transcript(world: World) -> None:
    run_id = new_run(world, "first")
    conversation = world.api("GET", f"/agent/runs/{run_id}").json()["conversation_id"]
    at = f"/agent/conversations/{conversation}"
    body = world.api("GET", at).json()
    assert body["run_ids"] == [run_id] and [m["text"] for m in body["messages"]] == ["first"]
    assert world.api("GET", f"{at}/transcript").status_code == 404  # nothing finished yet

    runner = Runner(world)
    runner.claim()
    runner.on(run_id, "finish", outcome="SUCCEEDED", transcript="the whole session")
    moved = world.api("GET", f"{at}/transcript", follow_redirects=False)
    assert moved.status_code == 302
    content = world.api("GET", moved.headers["location"].split("/api/v1", 1)[1], headers={})
    assert content.status_code == 200 and content.text == "the whole session"

    assert world.api("GET", at, headers=world.stranger).status_code == 404
    assert world.api("GET", f"{at}/transcript", headers=world.stranger).status_code == 404
    assert (
        world.api("GET", "/agent/conversations/00000000-0000-7000-8000-000000000000").status_code
        == 404
    )


def test_the_run_a_pull_request_url_belongs_to(world: World) -> None:
    run_id = new_run(world, "open a PR")
    runner = Runner(world)
    runner.claim()
    url = "https://github.com/acme/widgets/pull/7"
    runner.on(run_id, "artifacts", 201, artifact_type="PULL_REQUEST", url=url, title="Fix")
    found = world.api("GET", "/agent/run-by-reference", params={"url": url})
    assert found.status_code == 200, found.text
    assert found.json()["run_id"] == run_id
    other = {"url": "https://github.com/acme/widgets/pull/8"}
    assert world.api("GET", "/agent/run-by-reference", params=other).status_code == 404
    hidden = world.api(
        "GET", "/agent/run-by-reference", params={"url": url}, headers=world.stranger
    )
    assert hidden.status_code == 404
    bad = world.api("GET", "/agent/run-by-reference", params={"url": "ftp://x"})
    assert bad.status_code == 400 and bad.json()["detail"].startswith("url")
    assert world.api("GET", "/agent/run-by-reference").status_code == 400


def test_the_skills_the_team_s_agents_offer(world: World) -> None:
    specs = ["acme/tools:lint", "acme/tools:skills/review/SKILL.md"]
    made = world.api("POST", "/agent/identities", json={"name": "Skilled", "skills": specs})
    assert made.status_code == 201, made.text
    also = world.api("POST", "/agent/identities", json={"name": "Linter", "skills": specs[:1]})
    assert also.status_code == 201, also.text
    skills = world.api("GET", "/agent/skills").json()["skills"]
    by_spec = {s["skill_spec"]: s for s in skills}
    assert by_spec["acme/tools:lint"]["name"] == "lint"
    assert sorted(by_spec["acme/tools:lint"]["agent_uids"]) == sorted(
        [made.json()["uid"], also.json()["uid"]]
    )
    assert by_spec["acme/tools:skills/review/SKILL.md"]["name"] == "review"
    assert by_spec["acme/tools:lint"]["repository"] == "acme/tools"
    stranger = world.api("GET", "/agent/skills", headers=world.stranger).json()["skills"]
    assert "acme/tools:lint" not in {s["skill_spec"] for s in stranger}
    assert world.api("GET", "/agent/skills", headers={}).status_code == 401
