"""Skill loads in conversation data (spec 2.3; SQLite and PostgreSQL): a runner reports
`read_skill` actions, with `bundled_skill_id` for the service's bundled references and
`skill_path` for a skill resolved by path; the normalized conversations show them as reported."""

from __future__ import annotations

from typing import Any

from tests.platform.runners.test_runner_api import Runner, new_run
from tests.support import World

BUNDLED = {"type": "read_skill", "input": {"bundled_skill_id": "factory-files"}}
BY_PATH = {
    "type": "read_skill",
    "input": {"skill_path": "acme/ops:.agents/skills/deploy/SKILL.md"},
}


def test_read_skill_actions_appear_in_the_normalized_conversation(world: World) -> None:
    run_id = new_run(world, "Write the factory files")
    runner = Runner(world)
    runner.claim()
    said = runner.on(run_id, "messages", messages=[
        {"role": "agent", "text": "Loading the factory-files skill.", "action": BUNDLED},
        {"role": "agent", "action": BY_PATH},
        {"role": "agent", "text": "Done: wrote factory.yaml."},
    ])  # fmt: skip
    assert said == {"appended": 3}
    messages = world.api("GET", f"/agent/runs/{run_id}/conversation").json()["messages"]
    assert [(m["kind"], m["role"], m["text"]) for m in messages] == [
        ("prompt", "user", "Write the factory files"),
        ("action", "agent", "Loading the factory-files skill."),
        ("action", "agent", ""),
        ("message", "agent", "Done: wrote factory.yaml."),
    ]
    assert [m.get("action") for m in messages] == [None, BUNDLED, BY_PATH, None]
    conversation_id = world.api("GET", f"/agent/runs/{run_id}").json()["conversation_id"]
    whole = world.api("GET", f"/agent/conversations/{conversation_id}").json()["messages"]
    assert [m.get("action") for m in whole] == [None, BUNDLED, BY_PATH, None]


def test_malformed_actions_are_refused(world: World) -> None:
    run_id = new_run(world)
    runner = Runner(world)
    runner.claim()
    bad: list[Any] = [
        {"type": "read_skill", "input": {}},
        {"type": "read_skill", "input": {"bundled_skill_id": "Not An Id"}},
        {"type": "run_shell", "input": {"skill_path": "x"}},
        {"type": "read_skill", "input": {"skill_path": "x", "owner": "me"}},
    ]
    for action in bad:
        answer = world.api(
            "POST",
            f"/runner/runs/{run_id}/messages",
            headers=world.agent,
            json={"runner_uid": runner.uid, "messages": [{"role": "agent", "action": action}]},
        )
        assert answer.status_code == 400, action
        assert answer.json()["detail"].startswith("messages[0].action"), answer.json()
    messages = world.api("GET", f"/agent/runs/{run_id}/conversation").json()["messages"]
    assert [m["kind"] for m in messages] == ["prompt"]
