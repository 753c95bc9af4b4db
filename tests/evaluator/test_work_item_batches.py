"""Work items in the evaluator's batches, on SQLite and PostgreSQL: a delivery continues a work
item once, whatever happens to its batch (the same delivery twice in a batch, evaluated again by
a restarted evaluator whose log already holds it), and a work item a batch makes is continued
by a later delivery of the same batch. GitHub's payloads from @octokit/webhooks-examples."""

from __future__ import annotations

import asyncio
import copy
import secrets
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import event, select, update

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.platform.run_start import PLATFORM
from gateway.platform.work_items.store import WORK_ITEMS, find_work_items
from gateway.webhook_gateway.evaluator.delivery_runs import AcceptedDelivery, RunStarter
from gateway.webhook_gateway.evaluator.run_platform import KnownWorkItem, WorkItemKey
from tests.connections.provider_world import automation, connect, set_repositories, trigger
from tests.evaluator.test_runs_automation_starter import evaluate, log_and_write
from tests.providers.conftest import GithubExamples, github_examples
from tests.support import World

__all__ = ["github_examples"]

RUN = secrets.token_hex(4)  # delivery ids of this run (the PostgreSQL database is shared)


def _delivery(uid: str, delivery_id: str, event: str, payload: Any) -> AcceptedDelivery:
    headers = f"content-type: application/json\r\nx-github-event: {event}".encode()
    body = orjson.dumps(payload)
    return AcceptedDelivery(f"{delivery_id}-{RUN}", uid, datetime.now(UTC), body, headers)


def _items(world: World) -> list[Any]:
    async def read(services: Services) -> list[Any]:
        w = t.work_items
        query = select(w.c.id, w.c.ref, w.c.run_id, w.c.followup_count, w.c.stage)
        async with services.database.read() as conn:
            rows = await conn.execute(query.where(w.c.factory_uid == world.factory_uid))
            return sorted(rows, key=lambda row: row.ref)

    return world.client.run(read)


def _follow_ups(world: World, run_id: str) -> list[str]:
    async def read(services: Services) -> list[str]:
        f = t.work_item_follow_ups
        async with services.database.read() as conn:
            rows = await conn.execute(select(f.c.delivery_id).where(f.c.run_id == run_id))
            return sorted(row.delivery_id for row in rows)

    return world.client.run(read)


def test_each_delivery_continues_once(world: World, github_examples: GithubExamples) -> None:
    gw = world.client
    set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
    automation(world, world.factory_uid, "triage", trigger("github", "issue_created"))
    uid = connect(world, "github")["uid"]
    opened = next(p for p in github_examples["issues"] if p["action"] == "opened")
    example = next(p for p in github_examples["issue_comment"] if p["action"] == "created")
    said = copy.deepcopy(example)
    said["comment"]["body"] = "@fa and the docs"
    other = copy.deepcopy(opened)
    other["issue"]["number"] = 7
    on_other = copy.deepcopy(said)
    on_other["issue"]["number"] = 7

    starter = RunStarter(PLATFORM)
    first = gw.run(lambda s: evaluate(s, starter, [_delivery(uid, "open", "issues", opened)]))
    (ref,) = first[f"open-{RUN}"]
    run_id = ref.run_id
    mention = _delivery(uid, "m1", "issue_comment", said)
    # the same delivery twice in a batch, then a new issue and a mention of it in one batch
    batch = [
        mention,
        mention,
        _delivery(uid, "open7", "issues", other),
        _delivery(uid, "m7", "issue_comment", on_other),
    ]
    started = gw.run(lambda s: evaluate(s, starter, batch))
    assert f"m1-{RUN}" not in started and f"m7-{RUN}" not in started
    (ref7,) = started[f"open7-{RUN}"]
    run7 = ref7.run_id
    # a restarted evaluator (nothing cached) sees the mention again: its log already holds it
    restarted = RunStarter(PLATFORM)
    gw.run(lambda s: evaluate(s, restarted, [mention]))

    one, seven = _items(world)
    assert (one.ref, one.run_id, one.followup_count) == ("Codertocat/Hello-World#1", run_id, 1)
    assert (seven.ref, seven.run_id, seven.followup_count) == ("Codertocat/Hello-World#7", run7, 1)
    assert _follow_ups(world, run_id) == [f"m1-{RUN}"]
    assert _follow_ups(world, run7) == [f"m7-{RUN}"]
    assert one.stage == seven.stage == "TRIAGE"  # queued runs: a follow-up changes no state


def _statements(world: World, starter: RunStarter, batch: list[AcceptedDelivery]) -> int:
    """How many SQL statements evaluating `batch` takes, its plan and its transaction (the
    statements of this task only)."""

    async def run(services: Services) -> int:
        engines = [engine.sync_engine for engine in services.database.engines]
        evaluating = asyncio.current_task()
        count = 0

        def counted(*_args: Any) -> None:
            # the app's own background tasks use the same engine: count this task's statements
            nonlocal count
            if asyncio.current_task() is evaluating:
                count += 1

        for engine in engines:
            event.listen(engine, "before_cursor_execute", counted)
        try:
            await evaluate(services, starter, batch)
        finally:
            for engine in engines:
                event.remove(engine, "before_cursor_execute", counted)
        return count

    return world.client.run(run)


def _messages(world: World, run_id: str) -> list[str]:
    async def read(services: Services) -> list[str]:
        m = t.run_messages
        query = select(m.c.routing).where(m.c.run_id == run_id).order_by(m.c.created_at, m.c.id)
        async with services.database.read() as conn:
            return list((await conn.execute(query)).scalars())

    return world.client.run(read)


def test_follow_ups_cost_statements_per_batch_not_per_delivery(
    world: World, github_examples: GithubExamples
) -> None:
    """A busy issue: a batch's follow-ups of one work item are written in as many statements
    however many there are, in order (the first of an ended run resumes it, the next ones
    find it queued)."""
    gw = world.client
    set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
    automation(world, world.factory_uid, "triage", trigger("github", "issue_labeled"))
    uid = connect(world, "github")["uid"]
    labeled = next(p for p in github_examples["issues"] if p["action"] == "labeled")
    starter = RunStarter(PLATFORM)
    first = gw.run(lambda s: evaluate(s, starter, [_delivery(uid, "l0", "issues", labeled)]))
    (ref,) = first[f"l0-{RUN}"]

    def batch(name: str, n: int) -> list[AcceptedDelivery]:
        return [_delivery(uid, f"{name}{i}", "issues", labeled) for i in range(n)]

    # one statement a table either way: on SQLite 2 rows go as one executemany and 64 as one
    # multi-row statement (`BulkInsert.insert`), so both of its ways are counted
    few = _statements(world, starter, batch("few", 2))
    many = _statements(world, starter, batch("many", 64))
    assert few == many

    async def end(services: Services) -> None:
        r = t.runs
        async with services.database.transaction() as conn:
            await conn.execute(update(r).where(r.c.run_id == ref.run_id).values(state="SUCCEEDED"))

    gw.run(end)
    gw.run(lambda s: evaluate(s, starter, batch("ended", 3)))
    (item,) = _items(world)
    assert item.followup_count == 2 + 64 + 3
    assert len(_follow_ups(world, ref.run_id)) == 69
    assert _messages(world, ref.run_id) == ["queued"] * 66 + ["resumed", "queued", "queued"]


def test_two_evaluators_making_one_work_item_at_once_share_it(
    world: World, github_examples: GithubExamples
) -> None:
    """Two evaluators each plan the first run of the same new issue (neither saw the other's
    work item) and write at the same time: the second batch waits for the first's commit and
    its run joins that work item. On PostgreSQL its transaction used to fail on the work item's
    unique key, which put the whole batch through isolation, one delivery at a time."""
    gw = world.client
    set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
    automation(world, world.factory_uid, "triage", trigger("github", "issue_created"))
    uid = connect(world, "github")["uid"]
    opened = copy.deepcopy(next(p for p in github_examples["issues"] if p["action"] == "opened"))
    opened["issue"]["number"] = 41
    first, second = (_delivery(uid, name, "issues", opened) for name in ("race-a", "race-b"))

    async def race(services: Services) -> None:
        database = services.database
        plans = []
        for delivery in (first, second):  # each its own evaluator, both before either writes
            async with database.read() as conn:
                plans.append(await RunStarter(PLATFORM).plan(conn, [delivery]))

        async def write_second() -> None:
            async with database.transaction() as conn:
                await log_and_write(conn, plans[1], [second])

        async with database.transaction() as conn:
            await log_and_write(conn, plans[0], [first])
            later = asyncio.create_task(write_second())
            await asyncio.sleep(0.3)
            assert not later.done()  # waiting for this transaction (its row, or the writer's turn)
        await later

    gw.run(race)
    (item,) = [row for row in _items(world) if row.ref == "Codertocat/Hello-World#41"]

    async def read(services: Services) -> tuple[dict[str, tuple[str, str]], list[Any]]:
        r, e = t.runs, t.events
        wanted = [first.delivery_id, second.delivery_id]
        async with services.database.read() as conn:
            runs = await conn.execute(
                select(r.c.delivery_id, r.c.run_id, r.c.work_item_id).where(
                    r.c.delivery_id.in_(wanted)
                )
            )
            announced = await conn.execute(
                select(e.c.data).where(
                    e.c.type == "work_item.created", e.c.factory_uid == world.factory_uid
                )
            )
            return {row.delivery_id: (row.run_id, row.work_item_id) for row in runs}, [
                data["work_item_id"] for (data,) in announced
            ]

    runs, announced = gw.run(read)
    (first_run, first_item), (second_run, second_item) = (
        runs[first.delivery_id],
        runs[second.delivery_id],
    )
    assert first_item == second_item == item.id  # the second run joined the first's
    assert item.run_id == first_run != second_run  # later activity continues the first run
    assert announced.count(item.id) == 1  # work_item.created once


def test_a_batch_looks_up_more_work_items_than_one_statement_takes(world: World) -> None:
    """A batch's look-up finds every work item it names, however many: SQLite's IN lists go a
    chunk at a time (its parameter limit), PostgreSQL's refs as one array."""
    now = datetime.now(UTC)
    refs = [f"acme/many-{RUN}#{n}" for n in range(1_200)]
    rows = [
        {
            "id": f"wi_many{n}{RUN}", "team_uid": world.team_uid,
            "factory_uid": world.factory_uid, "provider": "github", "kind": "issue", "ref": ref,
            "stage": "TRIAGE", "followup_count": 0, "created_at": now, "updated_at": now,
        }
        for n, ref in enumerate(refs)
    ]  # fmt: skip

    async def look_up(services: Services) -> dict[WorkItemKey, KnownWorkItem]:
        async with services.database.transaction() as conn:
            await WORK_ITEMS.insert(conn, rows)
        async with services.database.read() as conn:
            return await find_work_items(conn, [*refs, f"acme/many-{RUN}#absent"])

    found = world.client.run(look_up)
    assert sorted(found) == sorted(WorkItemKey(world.factory_uid, "github", r) for r in refs)
    assert found[WorkItemKey(world.factory_uid, "github", refs[700])].id == f"wi_many700{RUN}"
