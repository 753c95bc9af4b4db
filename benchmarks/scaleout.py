"""Scale-out on Redis Cluster and PostgreSQL: N `gateway serve` processes, M `gateway worker`s.

    .venv/bin/python -m benchmarks.scaleout [--gateways 1,2] [--workers 1,2] [--duration 10]
        [--factories 100]

A private 3-master Redis Cluster (testbed/redis_cluster.py, first free ports from 18540) and a
temporary PostgreSQL database seeded once (20 webhooks per factory, 10 automations each, one
matching every payload: every accepted delivery starts a run). For each (N, M): the cluster is
flushed, N ingress-only servers (`GATEWAY_REDIS_CLUSTER=1`, `GATEWAY_EVALUATOR=off`, one
uvicorn worker each) and M workers (`GATEWAY_EVALUATOR_PRIORITY=normal`) start, one wrk per
server (`-t1 -c32`, closed loop, signed 1 KB bodies, every request a new delivery) runs for
`--duration` s, then the workers drain the streams.

Reported per (N, M), the figures the model in docs/performance-history.md is built from:
- ingress: 202s per second (sum over the wrk processes), server CPU per request;
- evaluation: deliveries evaluated per second from the load's start until drained, worker CPU
  per delivery;
- Redis: commands clients sent per delivery (`total_commands_processed`, summed over the
  masters, each EVALSHA one) and the commands run inside scripts too (commandstats), Redis CPU
  per delivery;
- PostgreSQL: rows written per delivery (`pg_stat_database` inserted + updated + deleted).
The check: every 202 is in the delivery log with exactly one run.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.requests_file import spread_plan, write_requests
from benchmarks.seed import Seed, seed
from benchmarks.sustained import _query
from benchmarks.targets import EVALUATOR, ROOT, Target, serve
from benchmarks.wrk import CONNECTIONS, run_wrk
from gateway.foundation.backends.contract import SHARDS
from testbed.postgres import temporary_database
from testbed.procs import cpu_seconds, process_tree, spawn, stop
from testbed.redis_cluster import ClusterServers, redis_cluster

PREFIX = "gwscale"
CLUSTER_PORT = 18540
RESULTS = ROOT / "benchmarks" / "results"


def main() -> int:
    args = _parser().parse_args()
    rundir = Path(tempfile.mkdtemp(prefix="bench-scaleout-"))
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    rows = []
    cluster_nodes = redis_cluster(CLUSTER_PORT, 3, last_port=CLUSTER_PORT + 59)
    with cluster_nodes as cluster, temporary_database("scale") as db:
        template = seed(
            db.replace("postgresql://", "postgresql+asyncpg://"),
            factories=args.factories,
            webhooks_per_factory=20,
            automations_per_webhook=10,
            auth_mode="signature",
            secret_key=base64.urlsafe_b64decode(key),
        )
        for gateways in [int(n) for n in args.gateways.split(",")]:
            for workers in [int(n) for n in args.workers.split(",")]:
                row = _run(template, db, cluster, key, rundir, gateways, workers, args)
                rows.append(row)
                print(_line(row), flush=True)
    result = {"command": "python -m benchmarks.scaleout", "args": vars(args), "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"scaleout-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"report: {path}")
    failures = [f"N={r['gateways']} M={r['workers']}: {f}" for r in rows for f in r["failures"]]
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scaleout")
    p.add_argument("--gateways", default="1,2", help="gateway serve process counts")
    p.add_argument("--workers", default="1,2", help="gateway worker process counts")
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--factories", type=int, default=100, help="20 webhooks each")
    p.add_argument("--drain-wait", type=float, default=120.0)
    return p


def _env(database: str, cluster: ClusterServers, key: str) -> dict[str, str]:
    return {
        "GATEWAY_DATABASE_URL": database,
        "GATEWAY_REDIS_URL": cluster.url,
        "GATEWAY_REDIS_CLUSTER": "1",
        "GATEWAY_REDIS_PREFIX": PREFIX,
        "GATEWAY_SECRET_KEY": key,
        "GATEWAY_EVALUATOR": "off",
        "GATEWAY_MAX_BACKLOG": "2000000",
        "GATEWAY_LOG_LEVEL": "warning",
    }


def _redis_counters(cluster: ClusterServers) -> tuple[int, int]:
    """(EVALSHA calls, every command run including those inside scripts), all masters."""
    scripts = every = 0
    for port in cluster.master_ports():
        with cluster.node(port) as node:
            stats = node.info("commandstats")
            scripts += int(stats.get("cmdstat_evalsha", {}).get("calls", 0))
            every += sum(int(v["calls"]) for v in stats.values())
    return scripts, every


def _pg_rows(database: str) -> int:
    [(rows,)] = _query(
        database,
        "SELECT tup_inserted + tup_updated + tup_deleted FROM pg_stat_database "
        "WHERE datname = current_database()",
    )
    return int(rows)


def _counts(database: str) -> tuple[int, int]:
    [(deliveries, runs)] = _query(
        database,
        "SELECT (SELECT count(*) FROM deliveries WHERE label = 'Accepted'), "
        "(SELECT count(*) FROM runs)",
    )
    return int(deliveries), int(runs)


def _run(
    template: Seed,
    database: str,
    cluster: ClusterServers,
    key: str,
    rundir: Path,
    gateways: int,
    workers: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    for port in cluster.master_ports():
        with cluster.node(port) as node:
            node.flushall()  # rate windows of the previous case
            node.config_resetstat()
    env = _env(database, cluster, key)
    target = Target("gateway-redis", "gateway.composition.app:app_from_environment", env)
    tag = f"n{gateways}m{workers}-{time.time_ns()}"
    # each server's requests go to its own share of the webhooks: 60 per webhook and minute
    share = len(template.webhooks) // gateways
    count = min(share * 60, int(40_000 * (args.duration + 2)))
    deliveries0, runs0 = _counts(database)
    procs = []
    with ExitStack() as stack:
        servers = [stack.enter_context(serve(target, 1, rundir)) for _ in range(gateways)]
        worker_env = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
        worker_env["GATEWAY_EVALUATOR_PRIORITY"] = "normal"
        for n in range(workers):
            log = rundir / f"worker-{tag}-{n}.log"
            procs.append(spawn(EVALUATOR, env=worker_env, log=log, cwd=ROOT))
        try:
            files = []
            for n, running in enumerate(servers):
                plan = spread_plan(f"{tag}-{n}", share, count)
                webhooks = template.webhooks[n * share : (n + 1) * share]
                path = rundir / f"{tag}-{n}.requests"
                write_requests(path, plan, webhooks, template.auth_mode, 1024,
                               f"127.0.0.1:{running.port}")  # fmt: skip
                files.append(path)
            time.sleep(2.0)  # workers up: groups created, scripts loaded
            server_pids = [p for s in servers for p in s.pids()]
            worker_pids = [p for w in procs for p in process_tree(w.pid)]
            redis_pids = [proc.pid for proc in cluster.procs.values()]
            cpu0 = [cpu_seconds(p) for p in (server_pids, worker_pids, redis_pids)]
            redis0, rows0 = _redis_counters(cluster), _pg_rows(database)
            started = time.monotonic()
            with ThreadPoolExecutor(gateways) as pool:
                results = list(
                    pool.map(
                        lambda sf: run_wrk(f"http://127.0.0.1:{sf[0].port}", sf[1], args.duration),
                        zip(servers, files, strict=True),
                    )
                )
            load_cpu = [cpu_seconds(p) for p in (server_pids,)]
            accepted = sum(r.statuses.get(202, 0) for r in results)
            drained_after = _drain(cluster, args.drain_wait)
            elapsed = time.monotonic() - started
            cpu1 = [cpu_seconds(p) for p in (server_pids, worker_pids, redis_pids)]
            redis1, rows1 = _redis_counters(cluster), _pg_rows(database)
        finally:
            for proc in procs:
                stop(proc)
            for path in rundir.glob(f"{tag}-*.requests"):
                path.unlink()
    deliveries, runs = _counts(database)
    logged, started_runs = deliveries - deliveries0, runs - runs0
    wrk_seconds = max(r.duration_s for r in results)
    row = {
        "gateways": gateways,
        "workers": workers,
        "accepted_per_s": accepted / wrk_seconds,
        "statuses": _merge([r.statuses for r in results]),
        "errors": _merge([r.errors for r in results]),
        "p99_ms": max(r.latency_ms.get("p99", 0.0) for r in results),
        "server_cpu_us_per_request": (load_cpu[0] - cpu0[0]) / max(1, accepted) * 1e6,
        "evaluated": logged,
        "runs": started_runs,
        "evaluated_per_s": logged / elapsed,
        "drained_s_after_load": drained_after,
        "worker_cpu_us_per_delivery": (cpu1[1] - cpu0[1]) / max(1, logged) * 1e6,
        "redis_cpu_us_per_delivery": (cpu1[2] - cpu0[2]) / max(1, logged) * 1e6,
        "redis_scripts_per_delivery": (redis1[0] - redis0[0]) / max(1, logged),
        "redis_commands_per_delivery": (redis1[1] - redis0[1]) / max(1, logged),
        "pg_rows_per_delivery": (rows1 - rows0) / max(1, logged),
    }
    failures = []
    # wrk drops the requests in flight when it stops: the server may have accepted them
    in_flight = CONNECTIONS * gateways
    if not accepted <= logged <= accepted + in_flight:
        failures.append(f"{accepted} answered 202 (+{in_flight} in flight), {logged} logged")
    if started_runs != logged:
        failures.append(f"{logged} deliveries logged, {started_runs} runs")
    if set(row["statuses"]) - {"202"} or any(row["errors"].values()):
        failures.append(
            f"statuses other than 202 or socket errors: {row['statuses']}, {row['errors']}"
        )
    row["failures"] = failures
    return row


def _merge(dicts: list[dict[Any, int]]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            merged[str(k)] = merged.get(str(k), 0) + v
    return merged


def _drain(cluster: ClusterServers, wait: float) -> float | None:
    """Seconds after the load until every shard stream is empty (evaluated, acknowledged and
    deleted); None if not within `wait`."""
    started = time.monotonic()
    streams = [f"{{{PREFIX}:s{shard}}}:stream" for shard in range(SHARDS)]
    with cluster.client() as client:
        while time.monotonic() - started < wait:
            if sum(client.xlen(stream) for stream in streams) == 0:
                return round(time.monotonic() - started, 1)
            time.sleep(0.25)
    return None


def _line(row: dict[str, Any]) -> str:
    return (
        f"N={row['gateways']} M={row['workers']}: {row['accepted_per_s']:,.0f} accepted/s "
        f"(p99 {row['p99_ms']:.0f} ms, {row['server_cpu_us_per_request']:.0f} µs server CPU/req), "
        f"{row['evaluated_per_s']:,.0f} evaluated/s incl. drain "
        f"({row['worker_cpu_us_per_delivery']:.0f} µs worker CPU/delivery, drained "
        f"{row['drained_s_after_load']} s after), Redis "
        f"{row['redis_scripts_per_delivery']:.2f} EVALSHA / "
        f"{row['redis_commands_per_delivery']:.1f} commands per delivery "
        f"({row['redis_cpu_us_per_delivery']:.0f} µs CPU), PostgreSQL "
        f"{row['pg_rows_per_delivery']:.1f} rows/delivery"
        + (f" FAILED: {row['failures']}" if row["failures"] else "")
    )


if __name__ == "__main__":
    raise SystemExit(main())
