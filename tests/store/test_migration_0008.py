"""Migration 0008 on a store with data: the pull requests runs already reported become
one record per URL (the first artifact's run and tree, the latest artifact's state); the
downgrade removes the table and the index."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import inspect, text

from gateway.foundation.store import create_database, migrate
from tests.conftest import make_settings
from tests.store.migration_support import downgrade_to, upgrade_to

RUN = (
    "INSERT INTO runs (run_id, team_uid, factory_uid, conversation_id, root_run_id, "
    "parent_run_id, prompt, state, source, run_type, created_at, updated_at, task_pending) "
    "VALUES (:r, 'team', 'fac', :r, :root, :parent, 'p', 'SUCCEEDED', 'API', 'cloud', :t, :t, "
    "false)"
)
ARTIFACT = (
    "INSERT INTO run_artifacts (artifact_uid, run_id, artifact_type, url, title, pr_state, "
    "created_at) VALUES (:a, :r, :kind, :url, :title, :state, :t)"
)


def moment(day: int, database: Any) -> datetime:
    value = datetime(2026, 10, day, tzinfo=UTC)
    return value.replace(tzinfo=None) if database.is_sqlite else value


def test_0008_records_each_reported_pull_request_once(fresh_store: str) -> None:
    url = make_settings(fresh_store).database_url

    async def run() -> dict[str, Any]:
        database = create_database(url)
        try:
            await upgrade_to(database, "0007")
            async with database.transaction() as conn:
                for run_id, root, day in (("root", "root", 1), ("child", "root", 2), ("b", "b", 3)):
                    parent = None if run_id == root else root
                    values = {"r": run_id, "root": root, "parent": parent}
                    await conn.execute(text(RUN), values | {"t": moment(day, database)})
                artifacts = [
                    ("a1", "child", "PULL_REQUEST", "https://g.test/1", "first", "open", 4),
                    ("a2", "b", "PULL_REQUEST", "https://g.test/1", "again", "merged", 5),
                    ("a3", "b", "PULL_REQUEST", "https://g.test/2", "other", "open", 6),
                    ("a4", "b", "FILE", None, "file", None, 7),
                ]
                usage = (
                    "INSERT INTO run_usage (id, run_id, input_tokens, output_tokens, component, "
                    "cost_usd, reported_at) VALUES ('u1', 'child', 1, 1, 'llm', 0.5, :t)"
                )
                await conn.execute(text(usage), {"t": moment(9, database)})
                for a, r, kind, link, title, state, day in artifacts:
                    row = {"a": a, "r": r, "kind": kind, "url": link, "title": title}
                    await conn.execute(
                        text(ARTIFACT), row | {"state": state, "t": moment(day, database)}
                    )
            await migrate(database)
            async with database.read() as conn:
                prs = (
                    await conn.execute(
                        text(
                            "SELECT url, run_id, root_run_id, artifact_uid, title, state, "
                            "factory_uid FROM pull_requests ORDER BY url"
                        )
                    )
                ).all()
                spend = (
                    await conn.execute(
                        text(
                            "SELECT factory_uid, root_run_id, source, run_created_at FROM run_usage"
                        )
                    )
                ).one()
                costs = (
                    await conn.execute(
                        text("SELECT url, tree_pr_count, cost_usd FROM pull_requests ORDER BY url")
                    )
                ).all()
                per_component = (
                    await conn.execute(text("SELECT url, component, cost_usd FROM pr_costs"))
                ).all()
                latency_from = (
                    await conn.execute(text("SELECT min(root_created_at) FROM pull_requests"))
                ).scalar()
            await downgrade_to(database, "0007")
            async with database.read() as conn:
                tables = await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
                indexes = await conn.run_sync(
                    lambda sync: {i["name"] for i in inspect(sync).get_indexes("runs")}
                )
                usage_columns = [c["name"] for c in await conn.run_sync(
                    lambda sync: inspect(sync).get_columns("run_usage"))]  # fmt: skip
            return {"prs": prs, "tables": tables, "indexes": indexes, "spend": spend,
                    "latency_from": latency_from, "usage_columns": usage_columns,
                    "costs": costs, "per_component": per_component}  # fmt: skip
        finally:
            await database.close()

    found = asyncio.run(run())
    assert [tuple(row) for row in found["prs"]] == [
        ("https://g.test/1", "child", "root", "a1", "again", "merged", "fac"),
        ("https://g.test/2", "b", "b", "a3", "other", "open", "fac"),
    ]
    factory, root, source, created = found["spend"]
    assert (factory, root, source) == ("fac", "root", "API")
    assert str(created).startswith("2026-10-02")  # the run's creation, not the report's
    assert str(found["latency_from"]).startswith("2026-10-01")  # the root run of PR 1
    assert "factory_uid" not in found["usage_columns"]
    # the child's usage belongs to the tree of PR 1, its only PR; PR 2's tree spent nothing
    assert [tuple(row) for row in found["costs"]] == [
        ("https://g.test/1", 1, 0.5),
        ("https://g.test/2", 1, 0.0),
    ]
    assert [tuple(row) for row in found["per_component"]] == [("https://g.test/1", "llm", 0.5)]
    assert "pull_requests" not in found["tables"]
    assert "ix_runs_factory_created" not in found["indexes"]
