"""/agent/schedules: create, list, get, update, delete, pause, resume, validation and visibility;
and the scheduler starting due slots once, after downtime once, never while paused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update

from gateway.foundation.accounts import identities
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.platform.schedules.scheduler import start_due
from tests.platform.runs.official_client import official_client
from tests.support import World

BASE = "/agent/schedules"


def _create(world: World, headers: dict[str, str] | None = None, **body: Any) -> Any:
    return world.api(
        "POST",
        BASE,
        headers=headers,
        json={"name": "nightly", "cron_schedule": "0 3 * * *", "prompt": "Tidy up"} | body,
    )


def _created(world: World, **body: Any) -> dict[str, Any]:
    response = _create(world, **body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _moment(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_create_get_list_update_pause_resume_delete(world: World) -> None:
    created = _created(world, metadata={"team.area": "ops"}, mode="plan")
    assert created["enabled"] is True and created["mode"] == "plan"
    assert created["scope"] == {"type": "Team", "uid": world.team_uid}
    assert created["created_by"]["uid"] == world.user_uid
    assert created["metadata"] == {"team.area": "ops"}
    next_run = _moment(created["history"]["next_run"])
    assert next_run is not None and next_run > datetime.now(UTC)
    assert (next_run.hour, next_run.minute) == (3, 0)
    assert created["history"]["last_ran"] is None
    one = f"{BASE}/{created['id']}"
    assert world.api("GET", one).json() == created
    _created(world, name="alpha")
    names = [s["name"] for s in world.api("GET", BASE).json()["schedules"]]
    assert names == ["alpha", "nightly"]

    body = {"name": "hourly", "cron_schedule": "15 * * * *", "enabled": True, "prompt": "Check"}
    updated = world.api("PUT", one, json=body)
    assert updated.status_code == 200, updated.text
    assert updated.json()["cron_schedule"] == "15 * * * *"
    assert _moment(updated.json()["history"]["next_run"]).minute == 15  # type: ignore[union-attr]
    assert "metadata" not in updated.json() and updated.json()["mode"] == "normal"  # replaced

    paused = world.api("POST", f"{one}/pause").json()
    assert paused["enabled"] is False and paused["history"]["next_run"] is None
    resumed = world.api("POST", f"{one}/resume").json()
    assert resumed["enabled"] is True and resumed["history"]["next_run"] is not None

    assert world.api("DELETE", one).json() == {"success": True}
    assert world.api("GET", one).status_code == 404
    assert world.api("DELETE", one).status_code == 404


def test_invalid_schedules_are_400_naming_the_field(world: World) -> None:
    cases = [
        ({"cron_schedule": "0 9 * * * *"}, "cron_schedule"),
        ({"cron_schedule": "@daily"}, "cron_schedule"),
        ({"cron_schedule": "61 * * * *"}, "cron_schedule"),
        ({"cron_schedule": "0 0 31 2 *"}, "cron_schedule"),
        # the grammar of factory files' schedules (croniter alone took these)
        ({"cron_schedule": "1-0 * * * *"}, 'cron_schedule: minute field "1-0": the range'),
        ({"cron_schedule": "0 9 * * 7"}, 'cron_schedule: day of week field "7"'),
        ({"prompt": None}, "prompt"),
        ({"agent_config": {"skill_spec": "not a spec"}}, "agent_config.skill_spec"),
        ({"agent_config": {"model_id": "no-such-model"}}, "agent_config.model_id"),
        ({"agent_uid": "agent_elsewhere"}, "agent_uid"),
        ({"agent_uid": "x", "team": False}, "agent_uid"),
        ({"metadata": {"bad key": "v"}}, "metadata"),
        ({"metadata": {str(i): "v" for i in range(21)}}, "metadata"),
        ({"mode": "fast"}, "mode"),
        ({"name": " "}, "name"),
        ({"unknown": 1}, "unknown"),
    ]
    for body, field in cases:
        response = _create(world, **body)
        assert response.status_code == 400, (body, response.text)
        assert field in response.json()["detail"], (body, response.json())


def test_a_skill_names_the_schedules_runs_and_stands_in_for_the_prompt(world: World) -> None:
    created = _created(world, prompt=None, agent_config={"skill_spec": "acme/tools:triage"})
    assert created["agent_config"] == {"skill_spec": "acme/tools:triage", "name": "triage"}
    assert created["prompt"] == ""


def test_writes_need_a_user_and_personal_schedules_stay_personal(world: World) -> None:
    assert _create(world, headers=world.agent).status_code == 403
    personal = _created(world, team=False)
    assert personal["scope"] == {"type": "User", "uid": world.user_uid}

    async def teammate(services: Services) -> str:
        async with services.database.transaction() as conn:
            _, key = await identities.create_user(conn, world.team_uid, "mate@example.com")
        return key

    mate = {"Authorization": f"Bearer {world.client.run(teammate)}"}
    team_owned = _created(world, agent_uid=world.agent_uid)
    listed = [s["id"] for s in world.api("GET", BASE, headers=mate).json()["schedules"]]
    assert listed == [team_owned["id"]]
    assert world.api("GET", f"{BASE}/{personal['id']}", headers=mate).status_code == 404
    assert world.api("GET", f"{BASE}/{team_owned['id']}", headers=world.agent).status_code == 200
    assert world.api("GET", f"{BASE}/{team_owned['id']}", headers=world.stranger).status_code == 404
    assert (
        world.api("POST", f"{BASE}/{team_owned['id']}/pause", headers=world.agent).status_code
        == 403
    )
    assert world.api("GET", BASE, headers={}).status_code == 401


def _set_next_run(world: World, uid: str, at: datetime) -> None:
    async def go(services: Services) -> None:
        async with services.database.transaction() as conn:
            s = t.scheduled_agents
            await conn.execute(update(s).where(s.c.uid == uid).values(next_run_at=at))

    world.client.run(go)


def _runs_of(world: World, uid: str) -> list[Any]:
    async def go(services: Services) -> list[Any]:
        r = t.runs
        query = select(r).where(r.c.source == "SCHEDULED_AGENT").order_by(r.c.created_at)
        async with services.database.read() as conn:
            rows = (await conn.execute(query)).all()
        return [row for row in rows if (row.metadata or {}).get("scheduled_agent_id") == uid]

    return world.client.run(go)


def _start_due(world: World) -> int:
    return world.client.run(lambda services: start_due(services.database))


def test_a_due_slot_starts_one_run_and_downtime_starts_one_not_many(world: World) -> None:
    created = _created(world, cron_schedule="* * * * *", agent_uid=world.agent_uid,
                       metadata={"k": "v"})  # fmt: skip
    _set_next_run(world, created["id"], datetime.now(UTC) - timedelta(days=3))  # down 3 days
    started = datetime.now(UTC)
    _start_due(world)  # the scheduler loop of this test process may have started it already
    assert _start_due(world) == 0
    (run,) = _runs_of(world, created["id"])
    assert run.prompt == "Tidy up" and run.title == "nightly" and run.state == "QUEUED"
    assert run.team_uid == world.team_uid and run.agent_uid == world.agent_uid
    assert run.creator_uid == world.user_uid and run.metadata["k"] == "v"
    after = world.api("GET", f"{BASE}/{created['id']}").json()
    assert _moment(after["history"]["last_ran"]) is not None
    # the next slot after the one it ran (not after the read: a slow host can read it later)
    assert _moment(after["history"]["next_run"]) > started  # type: ignore[operator]
    listed = world.api("GET", "/agent/runs", params={"source": "SCHEDULED_AGENT"}).json()
    assert [r["run_id"] for r in listed["runs"]] == [run.run_id]


def test_a_paused_schedule_starts_nothing(world: World) -> None:
    created = _created(world, cron_schedule="* * * * *", enabled=False)
    assert created["history"]["next_run"] is None
    _set_next_run(world, created["id"], datetime.now(UTC) - timedelta(minutes=1))
    world.api("POST", f"{BASE}/{created['id']}/pause")  # already paused: stays so
    _start_due(world)
    assert _runs_of(world, created["id"]) == []


def test_a_slot_that_cannot_start_is_recorded_and_skipped(world: World) -> None:
    helper = world.api("POST", "/agent/identities", json={"name": "helper"}).json()
    created = _created(world, cron_schedule="* * * * *", agent_uid=helper["uid"])
    assert world.api("DELETE", f"/agent/identities/{helper['uid']}").status_code == 204
    _set_next_run(world, created["id"], datetime.now(UTC) - timedelta(minutes=1))
    started = datetime.now(UTC)
    _start_due(world)
    after = world.api("GET", f"{BASE}/{created['id']}").json()
    assert "no longer exists" in after["last_spawn_error"]
    assert _moment(after["history"]["next_run"]) > started  # type: ignore[operator]
    assert _runs_of(world, created["id"]) == []

    async def drop(services: Services) -> None:  # leaves no orphan behind for other tests
        async with services.database.transaction() as conn:
            s = t.scheduled_agents
            await conn.execute(delete(s).where(s.c.uid == created["id"]))

    world.client.run(drop)


def test_the_official_client_manages_schedules(world: World) -> None:
    oz = official_client(world)
    created = oz.agent.schedules.create(
        name="Weekly", cron_schedule="0 8 * * MON", prompt="Report.", metadata={"k": "v"}
    )
    assert created.enabled and created.scope is not None and created.scope.type == "Team"
    assert created.history is not None and created.history.next_run is not None
    assert created.history.next_run.weekday() == 0 and created.history.next_run.hour == 8
    assert [s.id for s in oz.agent.schedules.list().schedules] == [created.id]
    assert oz.agent.schedules.retrieve(created.id).metadata == {"k": "v"}
    updated = oz.agent.schedules.update(
        created.id, name="Weekly", cron_schedule="0 9 * * MON", enabled=True, prompt="Report!"
    )
    assert updated.prompt == "Report!" and updated.cron_schedule == "0 9 * * MON"
    assert not oz.agent.schedules.pause(created.id).enabled
    assert oz.agent.schedules.resume(created.id).enabled
    assert oz.agent.schedules.delete(created.id).success
