"""Evaluator throughput: accepted deliveries -> delivery log + runs, as a `gateway worker` does it.

    python -m benchmarks.evaluator_bench                 # the target figures (below)
    python -m benchmarks.evaluator_bench one [--db sqlite|postgresql] [--source stream|log]
        [--match all|none] [--kind webhook|provider] [--deliveries N] [--webhooks W]
        [--automations A] [--issues N] [--profile out.html] [--stages]

Seeds W webhooks x A automations by direct inserts (one payload filter per automation; with
`--match all` exactly one of each webhook's matches the benchmark payload, with `none` none
does). `--kind provider` seeds a team instead: 10 factories listing acme/widgets, each with A
automations whose GitHub `issue_labeled` triggers filter on labels (one automation of the team
matches the benchmark's `agent` label, the rest fail on their label, so a delivery is matched
against 10 x A compiled triggers and starts one run), and W GitHub connections of the team (the
deliveries are spread over them: each connection's rate window takes 60 a minute); each
delivery is a ~1 KB GitHub `issues` `labeled` payload with its stored `X-GitHub-Event` header,
each about an issue of its own (`--issues N`: about N issues, as the grid's 64 bodies are: the
first delivery about each starts its run, the later ones follow that run up).
Then queues N accepted deliveries the way ingress does, before the clock starts (passes
over the webhooks, each pass in a random order of its own, as the grid sends them):
`stream` submits them through the Redis backend's SUBMIT script into the shard streams of a
private redis-server; `log` writes them as pending rows through the embedded backend's
delivery writer. Then the real delivery consumer (the source, RunStarter, the batch transaction,
the acknowledgements) runs, with a `gateway worker`'s batch sizes, until every delivery is
evaluated. A warm-up delivery per webhook is evaluated first and not counted: a long-running
worker has compiled each webhook's filters once (the warm-up's time is reported apart).
Reported: deliveries/s and runs/s over the rest, the evaluator's CPU per delivery (this
process, all threads: `time.process_time`), and a correctness check (every delivery
logged and evaluated once, one run, one task and one attachment per match, the stream and
backlog empty). The default command runs the cases the evaluator is held to (`TARGETS`: issue
47's figures for 2 cores; it prints each met or MISSED, and exits 1 only when a check fails):

    SQLite, Redis streams, every delivery starts a run      >= 12,000 deliveries/s, <= 150 us CPU
    SQLite, the embedded outbox, every delivery starts a run >= 12,000 deliveries/s, <= 150 us CPU
    PostgreSQL, every delivery starts a run                 >= 9,000 deliveries/s, <= 150 us CPU
    SQLite, no delivery matches                             >= 15,000 deliveries/s
    GitHub deliveries (10 factories x 10 automations), an issue each or about 64 issues, on
    the streams and the outbox      >= 0.9x the custom webhooks' rate of the same source and run

`--stages` adds where the measured span went: the plan and write stages' wall time and each
statement's, on SQLite beside its thread's CPU, on PostgreSQL with the statements' preparations
apart (benchmarks/stage_timing.py).

SQLite runs in a temporary directory; PostgreSQL in a database of its own (created and
dropped: testbed/postgres.py).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import orjson
from sqlalchemy import func, select, text

from benchmarks.requests_file import spread_order
from benchmarks.seed import webhook_trigger
from benchmarks.stage_timing import timed_stages
from benchmarks.thread_cpu import ThreadCpu, ThreadIo
from gateway.composition import wiring
from gateway.composition.collector import collect_less_often
from gateway.foundation.backends.contract import RATE_LIMIT, Submission, Target, shard_of
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.foundation.store.bulk import BulkInsert
from gateway.kernel import ids
from gateway.kernel.settings import Settings, load_settings
from gateway.webhook_gateway.evaluator.delivery_consumer import Consumer
from gateway.webhook_gateway.ingress.pipeline import Ingress
from testbed.postgres import temporary_database

MATCH_TYPE = "bench.match"
HOOKS_PER_FACTORY = 10
PROVIDER_FACTORIES = 10
PROVIDER_MATCH = "aut_pbench00a00"  # the one automation of the team the deliveries match
PROVIDER_HEADERS = b"content-type: application/json\r\nx-github-event: issues"


class Goal(NamedTuple):
    """A case the evaluator is held to (issue 47's figures, 2 cores): at least `rate`
    deliveries a second, or, with `of`, within 10 % of that case's rate in the same run; at most
    `cpu` µs of CPU per delivery."""

    label: str
    db: str
    source: str
    match: str
    rate: int
    cpu: float | None = None
    kind: str = "webhook"
    issues: int = 0
    of: str | None = None


RUN_EACH = "SQLite, Redis streams, every delivery starts a run"
OUTBOX_RUN_EACH = "SQLite, the embedded outbox, every delivery starts a run"
TARGETS = (
    Goal(RUN_EACH, "sqlite", "stream", "all", 12_000, 150),
    Goal(OUTBOX_RUN_EACH, "sqlite", "log", "all", 12_000, 150),
    Goal("PostgreSQL, every delivery starts a run", "postgresql", "stream", "all", 9_000, 150),
    Goal("SQLite, no delivery matches", "sqlite", "stream", "none", 15_000),
    Goal("SQLite, GitHub deliveries, an issue each", "sqlite", "stream", "all", 0, 150,
         "provider", of=RUN_EACH),
    Goal("SQLite, GitHub deliveries about 64 issues", "sqlite", "stream", "all", 0, 150,
         "provider", issues=64, of=RUN_EACH),
    Goal("outbox, GitHub deliveries about 64 issues", "sqlite", "log", "all", 0, 150,
         "provider", issues=64, of=OUTBOX_RUN_EACH),
)  # fmt: skip
PROVIDER_WITHIN = 0.9  # of the custom webhooks' rate


@dataclass(frozen=True, slots=True)
class Case:
    db: str
    source: str
    match: str
    deliveries: int
    webhooks: int
    automations: int
    profile: str | None = None
    kind: str = "webhook"  # or "provider"
    issues: int = 0  # provider: how many issues the deliveries name (0: one each)
    stages: bool = False  # time the consumer's stages and the statements (stage_timing)


async def seed_provider(services: Services, case: Case) -> list[str]:
    """A team of 10 factories x `automations` GitHub automations and `webhooks` connections."""
    now = datetime.now(UTC)
    repositories = [{"owner": "acme", "name": "widgets"}]
    rows: dict[str, list[dict[str, Any]]] = {
        "factories": [],
        "automations": [],
        "provider_connections": [],
    }
    for f in range(PROVIDER_FACTORIES):
        factory_uid = f"fac_pbench{f:02d}"
        rows["factories"].append(
            {
                "uid": factory_uid,
                "team_uid": "team_bench",
                "name": f"bench factory {f}",
                "foreman_agent_uid": "agt_bench",
                "repositories": repositories,
                "created_at": now,
                "updated_at": now,
            }
        )
        for a in range(case.automations):
            uid = f"aut_pbench{f:02d}a{a:02d}"
            label = "agent" if uid == PROVIDER_MATCH and case.match == "all" else f"other-{f}-{a}"
            trigger = {
                "provider": "github",
                "event": "issue_labeled",
                "filter": {"labels": {"in": [label]}},
            }
            rows["automations"].append(
                {
                    "uid": uid,
                    "factory_uid": factory_uid,
                    "name": f"bench {uid}",
                    "prompt": f"Handle the issue for {uid}. " * 8,
                    "enabled": True,
                    "triggers": [trigger],
                    "created_at": now + timedelta(microseconds=f * 100 + a),
                    "updated_at": now,
                }
            )
    connections = [f"pcn_bench{c:06d}" for c in range(case.webhooks)]
    for uid in connections:
        rows["provider_connections"].append(
            {
                "uid": uid,
                "team_uid": "team_bench",
                "provider": "github",
                "name": f"GitHub {uid}",
                "enabled": True,
                "config_version": 1,
                "created_at": now,
                "updated_at": now,
            }
        )
    await _insert(services, rows, now)
    return connections


async def _insert(services: Services, rows: dict[str, list[dict[str, Any]]], now: datetime) -> None:
    async with services.database.transaction() as conn:
        await conn.execute(
            t.teams.insert(), [{"uid": "team_bench", "name": "bench", "created_at": now}]
        )
        await conn.execute(
            t.agents.insert(),
            [{"uid": "agt_bench", "team_uid": "team_bench", "name": "foreman", "created_at": now}],
        )
        for name, batch in rows.items():
            # as the evaluator writes: a few multi-row statements (on PostgreSQL the config
            # tables' statement trigger updates the one config_revision row once a statement,
            # and one row's updates in one transaction cost more each time: an executemany of
            # 100,000 automations took 13 minutes)
            columns = tuple(dict.fromkeys(key for row in batch for key in row))
            bulk = BulkInsert(t.metadata.tables[name], columns)
            await bulk.insert(conn, batch)
    if not services.database.is_sqlite:  # planner statistics, as autovacuum would gather
        async with services.database.transaction() as conn:
            await conn.execute(text("ANALYZE"))


async def seed(services: Services, case: Case) -> list[str]:
    if case.kind == "provider":
        return await seed_provider(services, case)
    now = datetime.now(UTC)
    rows: dict[str, list[dict[str, Any]]] = {
        "factories": [],
        "webhooks": [],
        "automations": [],
        "automation_triggers": [],
    }
    hooks: list[str] = []
    for w in range(case.webhooks):
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
        for a in range(case.automations):
            auto_uid = f"aut_{uid[4:]}a{a:02d}"
            matches = a == 0 and case.match == "all"
            payload_filter = {"type": [MATCH_TYPE if matches else f"bench.other{a}"]}
            trigger = webhook_trigger(uid, payload_filter)
            rows["automations"].append(
                {
                    "uid": auto_uid,
                    "factory_uid": factory_uid,
                    "name": f"bench {uid} {a}",
                    "prompt": f"Handle the event for {uid}. " * 8,
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
    await _insert(services, rows, now)
    return hooks


def payload(i: int) -> bytes:
    """~1 KB, shaped like a forge event."""
    return orjson.dumps(
        {
            "type": MATCH_TYPE,
            "id": i,
            "action": "opened",
            "repository": {"full_name": "acme/widgets", "private": False, "id": 1296269},
            "sender": {"login": "octocat", "id": 583231, "type": "User"},
            "body": "x" * 760,
        }
    )


def github_payload(i: int) -> bytes:
    """~1 KB, a GitHub `issues` `labeled` delivery."""
    return orjson.dumps(
        {
            "action": "labeled",
            "label": {"name": "agent", "color": "ededed"},
            "issue": {
                "number": i,
                "title": "Widgets fail to render",
                "labels": [{"name": "agent"}, {"name": "bug"}],
                "assignees": [{"login": "octocat"}],
                "user": {"login": "hubot"},
                "body": "x" * 600,
            },
            "repository": {"full_name": "acme/widgets", "private": False, "id": 1296269},
            "sender": {"login": "octocat", "id": 583231, "type": "User"},
        }
    )


async def queue_deliveries(
    services: Services,
    hooks: list[str],
    n: int,
    first: int = 0,
    kind: str = "webhook",
    issues: int = 0,
) -> None:
    """N accepted deliveries (numbered from `first`), through the case's ingress backend;
    `issues`: the provider deliveries name that many issues (0: one each)."""
    ingress = services.ingress
    assert isinstance(ingress, Ingress)
    backend = ingress.backend
    targets = [Target(uid, 1, shard_of(uid)) for uid in hooks]
    backend.prepare(targets)
    # passes over every webhook, each in an order of its own, as the grid's requests arrive
    # (`requests_file.spread_order`): not in the seed's order, which swept the delivery log's
    # indexes by webhook from end to end
    order = spread_order(f"evaluator-{first}", len(targets), n)
    for start in range(first, first + n, 500):
        submissions = [
            Submission(
                targets[order[i - first]],
                ids.new_id("dlv"),
                f"bench-{i}",
                github_payload(i % issues if issues else i) if kind == "provider" else payload(i),
                True,
                PROVIDER_HEADERS if kind == "provider" else b"",
            )
            for i in range(start, min(first + n, start + 500))
        ]
        outcomes = await asyncio.gather(*(backend.submit(s) for s in submissions))
        refused = [o for o in outcomes if o.delivery_id is None]
        if refused:
            raise SystemExit(f"FAILED: ingress refused {len(refused)} deliveries: {refused[0]}")


async def evaluate_all(consumer: Consumer, n: int) -> float:
    """Seconds until the consumer (running in the background) has evaluated `n` deliveries in
    all."""
    started = time.perf_counter()
    while consumer.processed < n:
        await asyncio.sleep(0.01)
        if time.perf_counter() - started > 600:
            raise SystemExit(f"FAILED: only {consumer.processed} of {n} evaluated in 600 s")
    return time.perf_counter() - started


async def check(services: Services, case: Case, total: int) -> dict[str, Any]:
    """`total`: every delivery queued, the warm-up included."""
    d, r = t.deliveries, t.runs

    async def scalar(query: Any) -> int:
        async with services.database.read() as conn:
            return int((await conn.execute(query)).scalar_one())

    expected = total if case.match == "all" else 0
    # the first delivery about an issue starts its run; the later ones follow that run up
    runs = min(expected, case.issues) if case.issues else expected
    found = {
        "deliveries_logged": await scalar(select(func.count()).select_from(d)),
        "evaluated": await scalar(
            select(func.count()).select_from(d).where(d.c.evaluation == "evaluated")
        ),
        "runs": await scalar(select(func.count()).select_from(r)),
        "distinct_deliveries_with_runs": await scalar(
            select(func.count(r.c.delivery_id.distinct()))
        ),
        "follow_ups": await scalar(select(func.count()).select_from(t.work_item_follow_ups)),
        "tasks": await scalar(select(func.count()).select_from(t.tasks)),
        "attachments": await scalar(select(func.count()).select_from(t.attachments)),
        "wrong_automation": await scalar(
            select(func.count())
            .select_from(r)
            .where(
                r.c.automation_uid != PROVIDER_MATCH
                if case.kind == "provider"
                else r.c.automation_uid.not_like("%a00")
            )
        ),
    }
    if case.source == "stream":
        redis = services.pending_deliveries.redis  # type: ignore[attr-defined]
        keyspace = services.pending_deliveries.keyspace  # type: ignore[attr-defined]
        found["left_in_streams"] = sum([await redis.xlen(s) for s in keyspace.streams()])
        counters = [counter for counter, _ in keyspace.backlog_counters()]
        found["backlog_counter"] = sum([int(await redis.get(c) or 0) for c in counters])
    ok = (
        found["deliveries_logged"] == found["evaluated"] == total
        and found["runs"] == found["tasks"] == found["distinct_deliveries_with_runs"] == runs
        and found["follow_ups"] == expected - runs
        and found["attachments"] == expected  # a run's payload, or a follow-up's
        and found["wrong_automation"] == 0
        and found.get("left_in_streams", 0) == found.get("backlog_counter", 0) == 0
    )
    return {"ok": ok, "expected_runs": runs, **found}


def _settings(case: Case, database_url: str, redis_url: str | None) -> Settings:
    env = {
        "GATEWAY_DATABASE_URL": database_url,
        "GATEWAY_SECRET_KEY": base64.urlsafe_b64encode(b"b" * 32).decode(),
        "GATEWAY_EVALUATOR": "off",
        "GATEWAY_MAX_BACKLOG": str(max(100_000, case.deliveries + case.webhooks)),
        "GATEWAY_LOG_LEVEL": "warning",
    }
    if redis_url is not None:
        env["GATEWAY_REDIS_URL"] = redis_url
    return load_settings(env)


async def _ingress(case: Case, database_url: str, redis_url: str | None) -> tuple[list[str], float]:
    """Seeds the store and queues the deliveries: (the sources, the seed's seconds)."""
    ingress, _none = await wiring.start(_settings(case, database_url, redis_url))
    try:
        t0 = time.perf_counter()
        hooks = await seed(ingress, case)
        seeded = time.perf_counter() - t0
        kind, issues = case.kind, case.issues
        await queue_deliveries(ingress, hooks, len(hooks), kind=kind, issues=issues)  # warm-up
        await queue_deliveries(ingress, hooks, case.deliveries, len(hooks), kind, issues)
        return hooks, seeded
    finally:
        await ingress.close()


def _ingress_process(
    case: Case, database_url: str, redis_url: str | None
) -> tuple[list[str], float]:
    return asyncio.run(_ingress(case, database_url, redis_url))


async def bench(case: Case, database_url: str, redis_url: str | None) -> dict[str, Any]:
    settings = _settings(case, database_url, redis_url)
    # an ingress process of its own (spawned, so that its CPU and a tool following this process,
    # such as benchmarks.evaluator_cost's callgrind, leave it out), then gone
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        hooks, seeded = pool.submit(_ingress_process, case, database_url, redis_url).result()
    # a `gateway worker` process: only the evaluator, with its batch sizes and its collector
    collect_less_often()
    worker, consumer = await wiring.start(settings, with_worker=True)
    try:
        assert consumer is not None
        warm_up = await evaluate_all(consumer, len(hooks))
        profiler = None
        if case.profile:  # the steady state only, not the warm-up
            from pyinstrument import Profiler

            profiler = Profiler(async_mode="disabled")
            profiler.start()
        with ExitStack() as timing:
            stages = timing.enter_context(timed_stages()) if case.stages else None
            cpu0, runs0 = time.process_time(), consumer.runs_started
            main0 = time.thread_time()
            threads = ThreadCpu()
            threads.start()
            io = ThreadIo()
            io.start()
            elapsed = await evaluate_all(consumer, len(hooks) + case.deliveries)
            cpu, runs = time.process_time() - cpu0, consumer.runs_started - runs0
            main_cpu = time.thread_time() - main0
            by_thread = threads.stop()
            io_by_thread = io.stop()
        if profiler is not None and case.profile is not None:
            profiler.stop()
            Path(case.profile).write_text(profiler.output_html())
            print(profiler.output_text(unicode=False, color=False), file=sys.stderr)
        result = await check(worker, case, len(hooks) + case.deliveries)
        return {
            "case": asdict(case),
            "seed_s": round(seeded, 2),
            "warm_up_s": round(warm_up, 2),
            "elapsed_s": round(elapsed, 3),
            "deliveries_per_s": round(case.deliveries / elapsed, 1),
            "runs_per_s": round(runs / elapsed, 1),
            "cpu_us_per_delivery": round(cpu / case.deliveries * 1e6, 1),
            "event_loop_cpu_us_per_delivery": round(main_cpu / case.deliveries * 1e6, 1),
            # /proc's ticks (10 ms): rounded, unlike the two figures above
            "cpu_us_per_delivery_by_thread": {
                name: round(seconds / case.deliveries * 1e6, 1)
                for name, seconds in sorted(by_thread.items(), key=lambda kv: -kv[1])
            },
            # the system calls' bytes and calls a delivery, per thread kind
            "io_per_delivery_by_thread": {
                name: {label: round(n / case.deliveries, 1) for label, n in counts.items()}
                for name, counts in io_by_thread.items()
            },
            "compilations": consumer.starter.compilations,
            "check": result,
            **({"stages": stages.report(case.deliveries)} if stages is not None else {}),
        }
    finally:
        await worker.close()


def run_case(case: Case) -> dict[str, Any]:
    from testbed.redis_server import redis_server

    with ExitStack() as stack:
        if case.db == "sqlite":
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="evalbench"))
            database = f"sqlite:///{tmp}/gw.db"
        else:
            database = stack.enter_context(temporary_database("evalbench"))
        redis_url = None if case.source == "log" else stack.enter_context(redis_server()).url
        return asyncio.run(bench(case, database, redis_url))


def targets(args: argparse.Namespace) -> int:
    rows = []
    failed = False
    rates: dict[str, float] = {}
    for goal in TARGETS:
        case = Case(goal.db, goal.source, goal.match, args.deliveries, args.webhooks,
                    args.automations, kind=goal.kind, issues=goal.issues)  # fmt: skip
        result = run_case(case)
        rate = goal.rate if goal.of is None else PROVIDER_WITHIN * rates[goal.of]
        rates[goal.label] = result["deliveries_per_s"]
        met = result["deliveries_per_s"] >= rate and (
            goal.cpu is None or result["cpu_us_per_delivery"] <= goal.cpu
        )
        failed |= not result["check"]["ok"]
        rows.append({"target": goal.label, "met": met, "rate_target": round(rate), **result})
        bar = f">= {rate:,.0f}" + (f", 0.9x {goal.of}" if goal.of else "")
        print(
            f"{goal.label:58} {result['deliveries_per_s']:>9,.0f}/s ({bar})  "
            f"{result['cpu_us_per_delivery']:>6.1f} us CPU"
            + (f" (<= {goal.cpu})" if goal.cpu else "")
            + f"  {'met' if met else 'MISSED'}"
            + f"  check {'ok' if result['check']['ok'] else 'FAILED'}",
            file=sys.stderr,
        )
    print(json.dumps(rows, indent=2))
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=20_000)
    parser.add_argument("--webhooks", type=int, default=1_000)
    parser.add_argument("--automations", type=int, default=10)
    sub = parser.add_subparsers(dest="command")
    one = sub.add_parser("one", help="one case")
    one.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    one.add_argument("--source", choices=("stream", "log"), default="stream")
    one.add_argument("--match", choices=("all", "none"), default="all")
    one.add_argument("--profile", help="write a pyinstrument HTML profile here")
    one.add_argument(
        "--stages",
        action="store_true",
        help="report the plan and write stages' wall time and each statement's",
    )
    one.add_argument(
        "--kind",
        choices=("webhook", "provider"),
        default="webhook",
        help="custom webhook deliveries, or GitHub deliveries to provider connections",
    )
    one.add_argument(
        "--issues",
        type=int,
        default=0,
        help="provider: the deliveries name this many issues (the grid's: 64); default one each",
    )
    args = parser.parse_args()
    # one warm-up delivery and the rest per webhook (or connection), all within a minute
    most = RATE_LIMIT - 1
    if args.deliveries > most * args.webhooks:
        parser.error(
            f"--deliveries {args.deliveries} over --webhooks {args.webhooks} is more than the "
            f"{most} a webhook's rate window takes besides its warm-up "
            f"({RATE_LIMIT} a minute): pass --webhooks {-(-args.deliveries // most)} or more"
        )
    if args.command != "one":
        sys.exit(targets(args))
    case = Case(
        args.db,
        args.source,
        args.match,
        args.deliveries,
        args.webhooks,
        args.automations,
        args.profile,
        args.kind,
        args.issues,
        args.stages,
    )
    result = run_case(case)
    print(json.dumps(result, indent=2))
    if not result["check"]["ok"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
