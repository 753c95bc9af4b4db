"""Creating runs with what the official clients send (SQLite and PostgreSQL): both paths, the
skill, mode, metadata, files, the executing agent, and the refused fields; runs pinned to a
self-hosted worker (config.worker_host), which only that worker claims."""

from __future__ import annotations

import base64
from typing import Any

from gateway.foundation.accounts import identities
from gateway.foundation.services import Services
from tests.platform.runners.test_runner_api import Runner
from tests.support import World


def _create(world: World, path: str = "/agent/runs", **body: Any) -> Any:
    return world.api("POST", path, json=body)


def _run(world: World, run_id: str) -> dict[str, Any]:
    answer = world.api("GET", f"/agent/runs/{run_id}")
    assert answer.status_code == 200, answer.text
    run: dict[str, Any] = answer.json()
    return run


def test_the_typescript_clients_path_is_the_same_operation(world: World) -> None:
    created = _create(world, "/agent/run", prompt="Fix the build", title="Build")
    assert created.status_code == 200, created.text
    body = created.json()
    assert body["state"] == "QUEUED" and body["task_id"] == body["run_id"]
    run = _run(world, body["run_id"])
    assert (run["prompt"], run["title"], run["source"]) == ("Fix the build", "Build", "API")
    assert _create(world, "/agent/run", prompt=" ").status_code == 400


def test_skill_mode_metadata_and_files_reach_the_run_and_its_runner(world: World) -> None:
    log = b"2026-01-01 ERROR disk full\n"
    png = b"\x89PNG\r\n\x1a\n\x00"
    created = _create(
        world,
        prompt="Investigate the failure",
        skill="acme/ops:.agents/skills/triage/SKILL.md",
        config={"model_id": "gpt-5", "skill_spec": "acme/ops:ignored"},
        mode="plan",
        metadata={"ticket": "OPS-12", "team.area": "storage"},
        attachments=[
            {
                "data": base64.b64encode(log).decode(),
                "file_name": "err.log",
                "mime_type": "text/plain",
            }
        ],
        images=[{"data": base64.b64encode(png).decode(), "mime_type": "image/png"}],
        interactive=True,
        team=True,
    )
    assert created.status_code == 200, created.text
    run = _run(world, created.json()["run_id"])
    config = run["agent_config"]
    assert config["skill_spec"] == "acme/ops:.agents/skills/triage/SKILL.md"
    assert config["name"] == "triage" and config["model_id"] == "gpt-5"
    assert run["metadata"] == {"ticket": "OPS-12", "team.area": "storage"}
    listed = [
        (a["artifact_type"], a["data"]["filename"], a["data"]["mime_type"], a["data"]["size_bytes"])
        for a in run["artifacts"]
    ]
    assert listed == [
        ("FILE", "err.log", "text/plain", len(log)),
        ("FILE", "image-1.png", "image/png", len(png)),
    ]
    first = run["artifacts"][0]["data"]["artifact_uid"]
    details = world.api("GET", f"/agent/artifacts/{first}").json()
    assert world.client.get(details["data"]["download_url"]).content == log

    claimed = Runner(world).claim()[0]
    assert claimed["mode"] == "plan"
    files = {file["name"]: file for file in claimed["attachments"]}
    assert set(files) == {"err.log", "image-1.png"}
    assert world.client.get(files["err.log"]["download_url"]).content == log
    assert world.client.get(files["image-1.png"]["download_url"]).content == png


def test_a_child_inherits_metadata_and_its_own_keys_win(world: World) -> None:
    parent = _create(world, prompt="p", metadata={"a": "1", "b": "2"}).json()["run_id"]
    child = _create(world, prompt="c", parent_run_id=parent, metadata={"b": "3"}).json()["run_id"]
    assert _run(world, child)["metadata"] == {"a": "1", "b": "3"}


def test_a_skill_alone_names_the_work(world: World) -> None:
    created = _create(world, skill="acme/tools:review")
    assert created.status_code == 200, created.text
    run = _run(world, created.json()["run_id"])
    assert run["prompt"] == "" and run["agent_config"]["name"] == "review"
    assert _create(world).json()["detail"].startswith("prompt")


def test_repo_only_skills_resolve_through_the_teams_environments(world: World) -> None:
    # the built-in environments link no repository: a bare repo name resolves to nothing
    refused = _create(world, skill="web:review")
    assert refused.status_code == 400 and refused.json()["detail"].startswith("skill")


def test_an_agent_of_the_team_can_execute_the_run(world: World) -> None:
    created = _create(world, prompt="p", agent_identity_uid=world.agent_uid)
    assert created.status_code == 200, created.text

    async def agent_of(services: Services) -> str | None:
        from gateway.platform.runs.record.store import find_run

        async with services.database.read() as conn:
            run = await find_run(conn, created.json()["run_id"])
        return None if run is None else run.agent_uid

    assert world.client.run(agent_of) == world.agent_uid
    other = _create(world, prompt="p", agent_identity_uid="agent_unknown")
    assert other.status_code == 400 and other.json()["detail"].startswith("agent_identity_uid")


def test_fields_this_service_refuses_say_why(world: World) -> None:
    personal = _create(world, prompt="p", team=False)
    assert personal.status_code == 400 and personal.json()["detail"].startswith("team")
    as_user = _create(world, prompt="p", on_behalf_of="u@example.com")
    assert as_user.status_code == 400 and as_user.json()["detail"].startswith("on_behalf_of")
    by_agent = world.api(
        "POST", "/agent/runs", headers=world.agent, json={"prompt": "p", "on_behalf_of": "u@x.io"}
    )
    assert by_agent.status_code == 403 and by_agent.json()["detail"].startswith("on_behalf_of")
    for bad, field in (
        ({"metadata": {"bad key": "v"}}, "metadata"),
        ({"metadata": {f"k{i}": "v" for i in range(21)}}, "metadata"),
        ({"metadata": {"k": "v" * 257}}, "metadata"),
        ({"mode": "fast"}, "mode"),
        ({"attachments": [{"data": "%%%", "file_name": "a", "mime_type": "text/plain"}]},
         "attachments[0].data"),
        ({"attachments": [{"data": "", "file_name": "a", "mime_type": "application/x-sh"}]},
         "attachments[0].mime_type"),
        ({"images": [{"data": "", "mime_type": "image/bmp"}]}, "images[0].mime_type"),
    ):  # fmt: skip
        answer = _create(world, prompt="p", **bad)
        assert answer.status_code == 400, bad
        assert answer.json()["detail"].startswith(field), answer.json()


# --- worker_host: runs pinned to a self-hosted worker ------------------------------------------


def _second_agent_key(world: World) -> dict[str, str]:
    async def go(services: Services) -> str:
        async with services.database.transaction() as conn:
            _, key = await identities.create_agent(conn, world.team_uid, "Box agent")
        return key

    return {"Authorization": f"Bearer {world.client.run(go)}"}


def test_a_run_pinned_to_a_worker_is_claimed_by_that_worker_alone(world: World) -> None:
    unknown = _create(world, prompt="p", config={"worker_host": "build-box-1"})
    assert unknown.status_code == 400
    assert unknown.json()["detail"].startswith("config.worker_host")

    box = Runner(world, _second_agent_key(world), worker_id="build-box-1")
    pool = Runner(world)
    other_box = Runner(world, worker_id="build-box-2")
    pinned = _create(world, prompt="on the box", config={"worker_host": "build-box-1"}).json()
    in_pool = _create(world, prompt="anywhere", config={"worker_host": "warp"}).json()
    plain = _create(world, prompt="anywhere too").json()

    assert other_box.claim(10) == []
    assert sorted(run["run_id"] for run in pool.claim(10)) == sorted(
        [in_pool["run_id"], plain["run_id"]]
    )
    assert [run["run_id"] for run in box.claim(10)] == [pinned["run_id"]]
    workers = world.api("GET", "/agent/workers").json()["workers"]
    assert {w["worker_id"] for w in workers} == {"build-box-1", "build-box-2", None}


def test_a_worker_cannot_take_the_pools_name(world: World) -> None:
    answer = world.api(
        "POST", "/runner/register", headers=world.agent, json={"name": "r", "worker_id": "warp"}
    )
    assert answer.status_code == 400 and answer.json()["detail"].startswith("worker_id")


def test_a_worker_of_another_team_does_not_count(world: World) -> None:
    async def stranger_agent(services: Services) -> str:
        async with services.database.transaction() as conn:
            _, key = await identities.create_agent(conn, world.other_team_uid, "Theirs")
        return key

    theirs = {"Authorization": f"Bearer {world.client.run(stranger_agent)}"}
    Runner(world, theirs, worker_id="their-box")
    answer = _create(world, prompt="p", config={"worker_host": "their-box"})
    assert answer.status_code == 400 and answer.json()["detail"].startswith("config.worker_host")


def test_agents_and_schedules_name_only_workers_of_the_team(world: World) -> None:
    agent = world.api("POST", "/agent/identities", json={"name": "A", "worker_host": "box-9"})
    assert agent.status_code == 400 and agent.json()["detail"].startswith("worker_host")
    schedule = {"name": "n", "cron_schedule": "0 3 * * *", "prompt": "p"}
    pinned = world.api(
        "POST", "/agent/schedules", json=schedule | {"agent_config": {"worker_host": "box-9"}}
    )
    assert pinned.status_code == 400
    assert pinned.json()["detail"].startswith("agent_config.worker_host")
    Runner(world, worker_id="box-9")
    agent = world.api("POST", "/agent/identities", json={"name": "A", "worker_host": " box-9 "})
    assert agent.status_code == 201 and agent.json()["worker_host"] == "box-9"
    pinned = world.api(
        "POST", "/agent/schedules", json=schedule | {"agent_config": {"worker_host": "box-9"}}
    )
    assert pinned.status_code == 201, pinned.text
