"""`factory` / `work_item_stage_changed` triggers, on SQLite and PostgreSQL: a task's stage
change starts one run of each automation of its factory whose `stages` hold the new stage, in
the task's conversation, in the transaction of the change."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from tests.connections.provider_world import add_factory, automation, trigger
from tests.platform.tasks.test_tasks_api import _task
from tests.support import World


def automation_runs(world: World, conversation_id: str) -> list[Any]:
    async def read(services: Services) -> list[Any]:
        r = t.runs
        query = (
            select(r)
            .where(r.c.conversation_id == conversation_id, r.c.source == "AUTOMATION")
            .order_by(r.c.created_at)
        )
        async with services.database.read() as conn:
            return list((await conn.execute(query)).all())

    result: list[Any] = world.client.run(read)
    return result


def test_a_stage_change_starts_the_matching_automations(world: World) -> None:
    review = automation(
        world,
        world.factory_uid,
        "review",
        trigger("factory", "work_item_stage_changed", stages=["IN_REVIEW"]),
        trigger("factory", "work_item_stage_changed", stages={"not_in": ["DONE", "CANCELLED"]}),
        prompt="Review the work.",
    )
    anything = automation(
        world, world.factory_uid, "any", trigger("factory", "work_item_stage_changed")
    )
    automation(
        world,
        world.factory_uid,
        "done",
        trigger("factory", "work_item_stage_changed", stages=["DONE"]),
    )
    other = add_factory(world.client, world, "Other")
    automation(world, other, "elsewhere", trigger("factory", "work_item_stage_changed"))
    task = _task(world)
    one = f"/factory/{world.factory_uid}/tasks/{task['uid']}"

    moved = world.api("PATCH", one, json={"stage": "IN_REVIEW"})
    assert moved.status_code == 200, moved.text
    runs = automation_runs(world, task["conversation_id"])
    # review matched twice (both triggers): one run; `done` and the other factory's: none
    assert sorted(run.metadata["automation_id"] for run in runs) == sorted([review, anything])
    first = next(run for run in runs if run.metadata["automation_id"] == review)
    assert first.prompt.startswith("Review the work.\n\n---\nWork item stage changed\n")
    assert f'task "{task["title"]}" (uid {task["uid"]})' in first.prompt
    assert "moved from TRIAGE to IN_REVIEW" in first.prompt
    assert first.metadata == {
        "automation_id": review,
        "task_uid": task["uid"],
        "from_stage": "TRIAGE",
        "to_stage": "IN_REVIEW",
    }
    assert first.agent_uid == world.agent_uid and first.factory_uid == world.factory_uid
    assert first.root_run_id == first.run_id  # a new root run of the task's conversation

    assert world.api("PATCH", one, json={"title": "renamed"}).status_code == 200  # no stage change
    assert world.api("PATCH", one, json={"stage": "IN_REVIEW"}).status_code == 200  # the same
    assert len(automation_runs(world, task["conversation_id"])) == 2
    assert world.api("PATCH", one, json={"stage": "DONE"}).status_code == 200
    names = [run.title for run in automation_runs(world, task["conversation_id"])]
    assert sorted(names[2:]) == ["any", "done"]
    disabled = world.api(
        "PATCH", f"/factory/{world.factory_uid}/automations/{anything}", json={"enabled": False}
    )
    assert disabled.status_code == 200
    assert world.api("PATCH", one, json={"stage": "TODO"}).status_code == 200
    assert [run.title for run in automation_runs(world, task["conversation_id"])][4:] == ["review"]
