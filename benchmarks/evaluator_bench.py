"""Evaluator throughput: accepted deliveries -> automation runs, as the delivery consumer does it.

    python -m benchmarks.evaluator_bench [--db sqlite|postgresql] [--deliveries N]
        [--webhooks W] [--automations A] [--batch B] [--profile out.html]

Seeds W webhooks x A automations (one payload filter per automation; exactly one matches the
benchmark payload) by direct inserts, then feeds N accepted deliveries, spread round-robin over
the webhooks, through `deliveries.store_records` in batches of B, one transaction per batch,
exactly as `Consumer._commit` does (one long-lived RunStarter, as `wiring` builds it). Prints
JSON: deliveries/s, runs/s and a correctness check (one run per match, no duplicates, one
attachment per run). SQLite runs in a temporary directory; PostgreSQL in a database of its own
(created and dropped; GATEWAY_BENCH_POSTGRES_URL, default postgresql://postgres@127.0.0.1:5432).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import secrets
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import func, select, text

from gateway.backends.base import DeliveryRecord, Label
from gateway.domain import deliveries
from gateway.domain.automation_runs import RunStarter
from gateway.services import Services, build_services
from gateway.settings import load_settings
from gateway.store import migrate
from gateway.store import tables as t

MATCH_TYPE = "bench.match"
HOOKS_PER_FACTORY = 10
CHUNK = 5_000
PG_ADMIN = os.environ.get("GATEWAY_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432")


def _settings(database_url: str) -> Any:
    return load_settings(
        {
            "GATEWAY_DATABASE_URL": database_url,
            "GATEWAY_SECRET_KEY": base64.urlsafe_b64encode(b"b" * 32).decode(),
            "GATEWAY_WEBHOOK_BASE_URL": "https://hooks.example.test",
        }
    )


async def seed(services: Services, webhooks: int, per_webhook: int) -> list[str]:
    now = datetime.now(UTC)
    rows: dict[str, list[dict[str, Any]]] = {
        "factories": [],
        "webhooks": [],
        "automations": [],
        "automation_triggers": [],
    }
    hooks: list[str] = []
    for w in range(webhooks):
        factory_uid = f"fac_bench{w // HOOKS_PER_FACTORY:05d}"
        if w % HOOKS_PER_FACTORY == 0:
            rows["factories"].append(
                {
                    "uid": factory_uid,
                    "team_uid": "team_bench",
                    "name": f"bench factory {factory_uid}",
                    "foreman_agent_uid": "agt_bench",
                    "created_at": now,
                    "updated_at": now,
                }
            )
        uid = f"whk_bench{w:06d}"
        hooks.append(uid)
        rows["webhooks"].append(
            {
                "uid": uid,
                "factory_uid": factory_uid,
                "name": f"hook {uid}",
                "auth_mode": "token",
                "token_hash": "0" * 64,
                "enabled": True,
                "config_version": 1,
                "created_at": now,
                "updated_at": now,
            }
        )
        for a in range(per_webhook):
            auto_uid = f"aut_{uid[4:]}a{a:02d}"
            payload_filter = {"type": [MATCH_TYPE if a == 0 else f"bench.other{a}"]}
            trigger = {
                "provider": "webhook",
                "event": "received",
                "filter": {"webhook_ids": [uid], "payload": payload_filter},
            }
            rows["automations"].append(
                {
                    "uid": auto_uid,
                    "factory_uid": factory_uid,
                    "name": f"bench {uid} {a}",
                    "prompt": f"Handle the event for {uid}.",
                    "enabled": True,
                    "triggers": [trigger],
                    "created_at": now + timedelta(microseconds=a),
                    "updated_at": now,
                }
            )
            rows["automation_triggers"].append(
                {
                    "automation_uid": auto_uid,
                    "position": 0,
                    "webhook_uid": uid,
                    "payload_filter": payload_filter,
                }
            )
    async with services.database.transaction() as conn:
        await conn.execute(
            t.teams.insert(), [{"uid": "team_bench", "name": "bench", "created_at": now}]
        )
        await conn.execute(
            t.agents.insert(),
            [{"uid": "agt_bench", "team_uid": "team_bench", "name": "foreman", "created_at": now}],
        )
        for name, batch in rows.items():
            table = t.metadata.tables[name]
            for start in range(0, len(batch), CHUNK):
                await conn.execute(table.insert(), batch[start : start + CHUNK])
    if not services.database.is_sqlite:  # planner statistics, as autovacuum would gather
        async with services.database.transaction() as conn:
            await conn.execute(text("ANALYZE"))
    return hooks


def records(hooks: list[str], n: int) -> list[DeliveryRecord]:
    now = datetime.now(UTC)
    out = []
    for i in range(n):
        payload = orjson.dumps(
            {
                "type": MATCH_TYPE,
                "id": i,
                "repository": {"full_name": "acme/widgets", "private": False},
                "sender": {"login": "octocat", "id": 583231},
                "body": "x" * 400,
            }
        )
        out.append(
            DeliveryRecord(
                delivery_id=f"dlv_bench{i:08d}",
                webhook_uid=hooks[i % len(hooks)],
                received_at=now,
                size=len(payload),
                label=Label.ACCEPTED,
                payload=payload,
            )
        )
    return out


async def process(
    services: Services, recs: list[DeliveryRecord], batch: int, starter: RunStarter
) -> float:
    started = time.perf_counter()
    for i in range(0, len(recs), batch):
        async with services.database.transaction() as conn:
            await deliveries.store_records(conn, services, recs[i : i + batch], starter)
    return time.perf_counter() - started


async def check(services: Services, n: int, per_match: int) -> dict[str, Any]:
    ar, r, att = t.automation_runs, t.runs, t.attachments
    async with services.database.read() as conn:

        async def scalar(query: Any) -> int:
            return int((await conn.execute(query)).scalar_one())

        pairs = await scalar(select(func.count()).select_from(ar))
        runs = await scalar(select(func.count()).select_from(r))
        attachments = await scalar(select(func.count()).select_from(att))
        distinct_runs = await scalar(select(func.count(func.distinct(ar.c.run_id))))
        unmatched = await scalar(
            select(func.count()).select_from(ar).where(ar.c.automation_uid.not_like("%a00"))
        )
        logged = await scalar(select(func.count()).select_from(t.deliveries))
    expected = n * per_match
    ok = (
        pairs == runs == attachments == distinct_runs == expected and unmatched == 0 and logged == n
    )
    return {
        "ok": ok,
        "expected_runs": expected,
        "automation_runs": pairs,
        "runs": runs,
        "attachments": attachments,
        "distinct_run_ids": distinct_runs,
        "wrong_automation": unmatched,
        "deliveries_logged": logged,
    }


async def bench(args: argparse.Namespace, database_url: str) -> dict[str, Any]:
    services = build_services(_settings(database_url))
    try:
        await migrate(services.database)
        t0 = time.perf_counter()
        hooks = await seed(services, args.webhooks, args.automations)
        seeded = time.perf_counter() - t0
        recs = records(hooks, args.deliveries)
        starter = RunStarter(services)
        profiler = None
        if args.profile:
            from pyinstrument import Profiler

            profiler = Profiler(async_mode="enabled")
            profiler.start()
        elapsed = await process(services, recs, args.batch, starter)
        if profiler is not None:
            profiler.stop()
            Path(args.profile).write_text(profiler.output_html())
            print(profiler.output_text(unicode=False, color=False), file=sys.stderr)
        # a redelivery of the first batch: nothing new may start
        await process(services, recs[: args.batch], args.batch, starter)
        result = await check(services, args.deliveries, 1)
        runs = result["runs"]
        return {
            "db": args.db,
            "webhooks": args.webhooks,
            "automations_per_webhook": args.automations,
            "deliveries": args.deliveries,
            "batch": args.batch,
            "seed_s": round(seeded, 2),
            "elapsed_s": round(elapsed, 3),
            "deliveries_per_s": round(args.deliveries / elapsed, 1),
            "runs_per_s": round(runs / elapsed, 1),
            "compilations": starter.compilations,
            "check": result,
        }
    finally:
        await services.close()


async def _pg_admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(f"{PG_ADMIN}/postgres")
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--deliveries", type=int, default=5_000)
    parser.add_argument("--webhooks", type=int, default=1_000)
    parser.add_argument("--automations", type=int, default=10)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--profile", help="write a pyinstrument HTML profile here")
    args = parser.parse_args()
    if args.db == "sqlite":
        with tempfile.TemporaryDirectory(prefix="evalbench") as tmp:
            result = asyncio.run(bench(args, f"sqlite:///{tmp}/gw.db"))
    else:
        name = f"evalbench_{os.getpid()}_{secrets.token_hex(3)}"
        asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
        try:
            result = asyncio.run(bench(args, f"{PG_ADMIN}/{name}"))
        finally:
            asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    print(json.dumps(result, indent=2))
    if not result["check"]["ok"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
