"""Sustained load: an open-loop rate held for a minute, every delivery starting a run.

    python -m benchmarks.run sustained [--fraction 0.5 [--of bare|gateway] | --rate R]
        [--duration 60] [--evaluators 1,2] [--db sqlite|postgresql] [--backend redis|embedded]
        [--auth signature|token] [--quick]

`--backend redis` (default), the gateway as deployed at scale: one ingress-only `gateway serve`
worker (GATEWAY_EVALUATOR=off) and M `gateway worker` processes reading the same shard streams as
one consumer group, at normal CPU priority as dedicated workers run. `--backend embedded`, the
default deployment: no Redis, SQLite, ingress appending to its outbox and M `gateway worker`
processes beside it at the priority `gateway serve` gives its evaluator child (M = 1 is exactly
what `gateway serve` runs). First a maximum is measured (wrk, closed loop, 10 s, 64
connections): the bare endpoint's (`--of bare`, the default: the grid's `ceiling` server, what
the performance targets are stated against) or the gateway's own ingress (`--of gateway`); then,
for each M, a fresh store and Redis take `--fraction` of that maximum from the open-loop
generator (openloop.c) for `--duration` seconds.
Each of the 10,000 webhooks has 10 automations, one of which matches every payload. Requests are
signed (Standard Webhooks) by default, which bounds `--duration` at 450 s; `--auth token`
(a bearer token per webhook, which does not expire) allows runs of any length, to watch memory
for longer.

Reported per M: offered and achieved rate and the ingress latency; the evaluation lag of every
accepted delivery (evaluated_at - received_at, as the delivery log records them: from the 202
to the delivery in the log with its runs), p50/p99/max overall and p99 per 10 s of the run (the
lag must stay bounded throughout, not only on average); the RSS of the ingress worker, each
evaluator and Redis sampled every second (first and last 10 s, peak, and the maximum per 10 s:
growth that levels off is caches filling, growth that does not is a leak); the cores each of
them and the whole machine used per 10 s (where the CPU went when the lag grew); the
evaluators' CPU per delivery; and the check that nothing was lost (every 202 in the log,
evaluated, with exactly one run).
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks import accounting, loadgen
from benchmarks.cases import APPS, remove_store
from benchmarks.requests_file import spread_plan, write_requests
from benchmarks.seed import Seed, seed
from benchmarks.targets import EVALUATOR, ROOT, Target, serve
from benchmarks.wrk import run_wrk
from testbed.postgres import temporary_database
from testbed.procs import cpu_seconds, host_cpu, process_tree, spawn, stop
from testbed.redis_server import RedisServer, redis_server

PREFIX = "gwbench"
RESULTS = ROOT / "benchmarks" / "results"
LAG_WINDOW_S = 10.0
# requests are signed once, before the run, at its middle; the gateway accepts a signature for 5
# minutes either side of its time, and writing the requests file takes up to a minute
MAX_DURATION_S = 450.0


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    rundir = Path(tempfile.mkdtemp(prefix="bench-sustained-"))
    ok = False
    try:
        ok = _measure(args, argv, rundir)
    finally:  # the stores and request files take gigabytes in a long run: the logs alone stay
        if ok:
            shutil.rmtree(rundir, ignore_errors=True)
        else:
            for path in rundir.iterdir():
                if path.is_file() and path.suffix != ".log":
                    path.unlink(missing_ok=True)
            print(f"server logs kept in {rundir}")
    return 0 if ok else 1


def _measure(args: argparse.Namespace, argv: list[str], rundir: Path) -> bool:
    """Runs every case and writes the report; True when no check failed."""
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    factories = 100 if args.quick else 500
    duration = args.duration or (20.0 if args.quick else 60.0)
    if duration > MAX_DURATION_S and args.auth == "signature":
        raise SystemExit(
            f"--duration: at most {MAX_DURATION_S:.0f} s with signatures (they expire);"
            " --auth token runs longer"
        )
    native = loadgen.build(rundir)
    if native is None:
        raise SystemExit("FAILED: the open-loop generator needs a C compiler (apt-get install gcc)")
    rows = []
    embedded = args.backend == "embedded"
    if embedded and args.db != "sqlite":
        raise SystemExit("--backend embedded runs on its SQLite default (--db sqlite)")

    def seeded(name: str, factories: int) -> Seed:
        return seed(
            rundir / name,
            factories=factories,
            webhooks_per_factory=20,
            automations_per_webhook=10,
            auth_mode=args.auth,
            secret_key=base64.urlsafe_b64decode(key),
        )

    with redis_server() as redis:
        template = seeded("seed.db", factories)
        if args.rate:
            maximum = args.rate
        elif args.of == "bare":
            maximum = _bare_maximum(template, rundir)
        else:
            maximum = _maximum(template, redis, key, rundir, embedded)
        rate = args.rate or round(maximum * args.fraction, 1)
        # each webhook takes 60 deliveries a minute: a rate past what the seed's webhooks
        # take (a fast host's half of the bare endpoint) is seeded more webhooks, alike
        needed = math.ceil(rate / 20 * 1.02)  # factories of 20 webhooks
        if needed > factories:
            template = seeded("seed-more.db", needed)
            print(f"sustained: {len(template.webhooks):,} webhooks for that rate", flush=True)
        print(f"sustained: offering {rate:,.0f} deliveries/s for {duration:.0f} s", flush=True)
        for evaluators in [int(n) for n in args.evaluators.split(",")]:
            with _store(args.db, template, rundir, f"m{evaluators}", key) as database:
                row = _run(template, database, redis, key, rundir, native, rate, duration,
                           evaluators, args.drain_wait, embedded)  # fmt: skip
            rows.append(row)
            print(_line(row), flush=True)
    result = {
        "command": "python -m benchmarks.run sustained " + " ".join(argv),
        "db": args.db,
        "backend": args.backend,
        "maximum_rps": maximum,
        "maximum_of": None if args.rate else args.of,
        "rate": rate,
        "duration_s": duration,
        "auth": args.auth,
        "webhooks": len(template.webhooks),
        "rows": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"sustained-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"report: {path}")
    for row in rows:
        for verdict in _targets(row):
            print("target:", verdict)
    failures = [f for row in rows for f in row["failures"]]
    for failure in failures:
        print("FAILED:", failure)
    return not failures


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run sustained")
    p.add_argument("--fraction", type=float, default=0.5, help="of the measured maximum")
    p.add_argument("--of", choices=("bare", "gateway"), default="bare",
                   help="whose closed-loop maximum --fraction takes")  # fmt: skip
    p.add_argument("--rate", type=float, help="deliveries/s (skips measuring the maximum)")
    p.add_argument("--duration", type=float, help="seconds (default 60, quick 20)")
    p.add_argument("--evaluators", default="1,2", help="gateway worker counts to compare")
    p.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    p.add_argument("--backend", choices=("redis", "embedded"), default="redis")
    p.add_argument("--drain-wait", type=float, default=60.0)
    p.add_argument("--auth", choices=("signature", "token"), default="signature",
                   help="token: no expiry, --duration past 450 s")  # fmt: skip
    p.add_argument("--quick", action="store_true", help="2,000 webhooks, 20 s")
    return p


def _env(database_url: str, redis: RedisServer, key: str, embedded: bool) -> dict[str, str]:
    env = {
        "GATEWAY_DATABASE_URL": database_url,
        "GATEWAY_REDIS_PREFIX": PREFIX,
        "GATEWAY_SECRET_KEY": key,
        "GATEWAY_EVALUATOR": "off",
        "GATEWAY_LOG_LEVEL": "warning",
    }
    if not embedded:
        env["GATEWAY_REDIS_URL"] = redis.url
    return env


def _kind(embedded: bool) -> str:
    return "gateway-embedded" if embedded else "gateway-redis"


def _maximum(template: Seed, redis: RedisServer, key: str, rundir: Path, embedded: bool) -> float:
    """The ingress's closed-loop maximum (its evaluators beside it, as in the grid)."""
    with _store("sqlite", template, rundir, "max", key) as database:
        redis.flush()
        env = _env(database, redis, key, embedded)
        target = Target(
            _kind(embedded), "gateway.composition.app:app_from_environment", env, EVALUATOR
        )
        return _closed_loop(target, template, rundir, "ingress")


def _bare_maximum(template: Seed, rundir: Path) -> float:
    """The bare endpoint's closed-loop maximum (the grid's `ceiling`: an ASGI app that answers
    202 and does nothing else), under the same HTTP server and wrk settings."""
    return _closed_loop(Target("ceiling", APPS["ceiling"]), template, rundir, "bare endpoint")


def _closed_loop(target: Target, template: Seed, rundir: Path, name: str) -> float:
    """req/s of `target` under wrk for 10 s (1 KB deliveries spread over the seed's webhooks)."""
    count = min(len(template.webhooks) * 60, 40_000 * 12)
    plan = spread_plan("max", len(template.webhooks), count)
    with serve(target, 1, rundir) as running:
        requests = rundir / "max.requests"
        write_requests(requests, plan, template.webhooks, template.auth_mode, 1024,
                       f"127.0.0.1:{running.port}")  # fmt: skip
        result = run_wrk(f"http://127.0.0.1:{running.port}", requests, 10.0)
        requests.unlink()
    print(f"sustained: {name} maximum {result.rps:,.0f} req/s (wrk, 10 s)", flush=True)
    return result.rps


@contextmanager
def _store(db: str, template: Seed, rundir: Path, name: str, key: str) -> Iterator[str]:
    """A database URL holding the seeded store (PostgreSQL: seeded alike), dropped afterwards."""
    if db == "sqlite":
        path = rundir / f"{name}.db"
        path.write_bytes(template.database.read_bytes())
        try:
            yield f"sqlite:///{path}"
        finally:
            remove_store(path)
        return
    with temporary_database("sustained") as url:
        seed(
            url.replace("postgresql://", "postgresql+asyncpg://"),
            factories=len(template.webhooks) // 20,
            webhooks_per_factory=20,
            automations_per_webhook=template.automations_per_webhook,
            auth_mode=template.auth_mode,
            secret_key=base64.urlsafe_b64decode(key),
        )
        yield url


class _Sampler:
    """RSS (MiB) of each watched process and the CPU seconds used so far by each and by the
    whole machine, once a second, on a thread of its own."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.series: dict[str, list[float]] = {name: [] for name in pids}
        self.cpu: dict[str, list[float]] = {name: [] for name in [*pids, "machine"]}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            for name, pid in self.pids.items():
                self.series[name].append(_rss_mib(pid))
                self.cpu[name].append(cpu_seconds(process_tree(pid)))
            self.cpu["machine"].append(host_cpu()[0])

    def cores_per_window(self) -> dict[str, list[float]]:
        """Cores busy per LAG_WINDOW_S of the run, per process and for the machine: where the
        CPU went when the lag grew."""
        step = int(LAG_WINDOW_S)
        return {
            name: [round((s[i + step] - s[i]) / step, 2) for i in range(0, len(s) - step, step)]
            for name, s in self.cpu.items()
        }

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def _rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _run(
    template: Seed,
    database: str,
    redis: RedisServer,
    key: str,
    rundir: Path,
    native: Path,
    rate: float,
    duration: float,
    evaluators: int,
    drain_wait: float,
    embedded: bool,
) -> dict[str, Any]:
    redis.flush()
    with redis.client() as client:
        client.config_resetstat()
    env = _env(database, redis, key, embedded)
    count = int(rate * (duration + loadgen.WARMUP_S)) + 1
    plan = spread_plan(f"s{evaluators}", len(template.webhooks), count, rate=rate)
    target = Target(_kind(embedded), "gateway.composition.app:app_from_environment", env)
    workers = []
    try:
        with serve(target, 1, rundir) as running:
            # the default (normal) priority, as `gateway serve` runs its evaluator child
            worker_env = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
            for n in range(evaluators):
                log = rundir / f"worker-{evaluators}-{n}.log"
                workers.append(spawn(EVALUATOR, env=worker_env, log=log, cwd=ROOT))
            requests = rundir / "sustained.requests"
            # signed at the run's middle: valid throughout (MAX_DURATION_S)
            middle = datetime.now(UTC) + timedelta(seconds=duration / 2)
            write_requests(requests, plan, template.webhooks, template.auth_mode, 1024,
                           f"127.0.0.1:{running.port}", signed_at=middle)  # fmt: skip
            time.sleep(2.0)  # the workers are up (groups created, scripts loaded)
            watched = {"ingress": running.worker_pids()[0]}
            watched |= {f"evaluator{n + 1}": w.pid for n, w in enumerate(workers)}
            if not embedded and redis.proc is not None:
                watched["redis"] = redis.proc.pid
            eval_pids = [p for w in workers for p in process_tree(w.pid)]
            cpu0 = cpu_seconds(eval_pids)
            with _Sampler(watched) as sampler:
                load = subprocess.run(
                    loadgen.command(native, running.port, requests, rate, duration),
                    capture_output=True, text=True, timeout=loadgen.timeout(duration), check=False,
                )  # fmt: skip
                drained = _drain(database, redis, drain_wait, embedded)
            cpu = cpu_seconds(eval_pids) - cpu0
            requests.unlink()
    finally:
        for worker in workers:
            stop(worker)
    generated = json.loads(load.stdout.strip().splitlines()[-1])
    accepted = int(generated["statuses"].get("202", 0))
    lag = _lags(database)
    row = {
        "evaluators": evaluators,
        "offered_rps": generated["offered_rps"],
        "achieved_rps": generated["achieved_rps"],
        "statuses": generated["statuses"],
        "unanswered": generated["unanswered"],
        "unsent": generated["unsent"],
        "fell_behind": generated["fell_behind"],
        "ingress_latency_ms": generated["latency_ms"],
        "accepted": accepted,
        "drain_s_after_load": drained,
        "lag_s": lag,
        "rss_mib": {name: _summary(series) for name, series in sampler.series.items()},
        "evaluator_cpu_us_per_delivery": cpu / max(1, lag["deliveries"]) * 1e6,
        "cores_per_10s": sampler.cores_per_window(),
        "redis_us_per_delivery": {} if embedded else _redis_costs(redis, accepted),
    }
    row["failures"] = _check(row)
    return row


def _redis_costs(redis: RedisServer, accepted: int) -> dict[str, float]:
    """Redis's own CPU per accepted delivery, by command (INFO commandstats since the run's
    start; a script's commands count under it and under themselves)."""
    with redis.client() as client:
        stats: dict[str, Any] = client.info("commandstats")
    costs = {
        name.removeprefix("cmdstat_"): s["usec"] / max(1, accepted) for name, s in stats.items()
    }
    return {
        name: round(us, 2) for name, us in sorted(costs.items(), key=lambda c: -c[1]) if us >= 0.05
    }


def _drain(database: str, redis: RedisServer, wait: float, embedded: bool) -> float | None:
    """Seconds after the load until the streams (embedded: the outbox) hold nothing not
    evaluated; None if not within `wait`."""
    started = time.monotonic()
    with redis.client() as client:
        while time.monotonic() - started < wait:
            if embedded:
                waiting = accounting.store_counts(Path(database[len("sqlite:///") :])).pending
            else:
                waiting = sum(client.xlen(f"{{{PREFIX}:s{s}}}:stream") for s in range(16))
            if waiting == 0:
                return round(time.monotonic() - started, 1)
            time.sleep(0.25)
    return None


def _query(database: str, sql: str) -> list[tuple[Any, ...]]:
    if database.startswith("sqlite:///"):
        path = database[len("sqlite:///") :]
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as conn:
            return conn.execute(sql).fetchall()
    import asyncio

    import asyncpg

    async def run() -> list[tuple[Any, ...]]:
        conn = await asyncpg.connect(database)
        try:
            return [tuple(r) for r in await conn.fetch(sql)]
        finally:
            await conn.close()

    return asyncio.run(run())


def _as_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def _lags(database: str) -> dict[str, Any]:
    rows = _query(
        database,
        "SELECT d.received_at, d.evaluated_at, "
        "(SELECT count(*) FROM runs r WHERE r.delivery_id = d.delivery_id) "
        "FROM deliveries d WHERE d.label = 'Accepted'",
    )
    points = sorted(
        (_as_time(received), _as_time(evaluated), runs)
        for received, evaluated, runs in rows
        if evaluated is not None
    )
    lags = [(e - r).total_seconds() for r, e, _ in points]
    windows: list[float] = []
    if points:
        start = points[0][0]
        buckets: dict[int, list[float]] = {}
        for (received, _, _), lag in zip(points, lags, strict=True):
            buckets.setdefault(int((received - start).total_seconds() // LAG_WINDOW_S), []).append(
                lag
            )
        windows = [round(_pct(buckets[b], 0.99), 3) for b in sorted(buckets)]
    return {
        "deliveries": len(rows),
        "evaluated": len(points),
        "with_one_run": sum(1 for _, _, runs in points if runs == 1),
        "p50": round(_pct(lags, 0.50), 3) if lags else None,
        "p99": round(_pct(lags, 0.99), 3) if lags else None,
        "max": round(max(lags), 3) if lags else None,
        f"p99_per_{LAG_WINDOW_S:.0f}s": windows,
    }


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _summary(series: list[float]) -> dict[str, Any]:
    if not series:
        return {}
    head, tail = series[:10], series[-10:]
    step = int(LAG_WINDOW_S)
    return {
        "first_10s_max": round(max(head), 1),
        "last_10s_max": round(max(tail), 1),
        "peak": round(max(series), 1),
        "median": round(statistics.median(series), 1),
        # growth that levels off (bounded caches filling) is told apart from a leak here
        f"max_per_{step}s": [
            round(max(series[i : i + step]), 1) for i in range(0, len(series), step)
        ],
    }


def _check(row: dict[str, Any]) -> list[str]:
    lag, failures = row["lag_s"], []
    name = f"sustained with {row['evaluators']} evaluator(s)"
    failures += [f"{name}: {failure}" for failure in loadgen.failures(row)]
    if lag["deliveries"] < row["accepted"]:
        failures.append(f"{name}: {row['accepted']} 202s but {lag['deliveries']} logged")
    if lag["evaluated"] != lag["deliveries"] or lag["with_one_run"] != lag["evaluated"]:
        failures.append(f"{name}: not every accepted delivery evaluated with one run: {lag}")
    if row["drain_s_after_load"] is None:
        failures.append(f"{name}: the streams did not drain")
    return failures


# issue targets for the open-loop row: ingress p99, evaluation lag p99, and a backlog that does
# not grow (the last window's lag p99 within twice the first's, or under a second)
INGRESS_P99_MS = 20.0
LAG_P99_S = 1.0


def _targets(row: dict[str, Any]) -> list[str]:
    """The open-loop targets, met or not, for the report (a miss is not a failed check)."""
    name = f"{row['evaluators']} evaluator(s)"
    ingress, lag = row["ingress_latency_ms"]["p99"], row["lag_s"]
    windows = [w for w in lag[f"p99_per_{LAG_WINDOW_S:.0f}s"] if w is not None]
    steady = bool(windows) and (windows[-1] <= max(2 * windows[0], LAG_P99_S))
    return [
        f"{name}: ingress p99 {ingress:.1f} ms < {INGRESS_P99_MS:.0f} ms: "
        + ("met" if ingress < INGRESS_P99_MS else "not met"),
        f"{name}: evaluation lag p99 {lag['p99']} s < {LAG_P99_S:.0f} s: "
        + ("met" if lag["p99"] is not None and lag["p99"] < LAG_P99_S else "not met"),
        f"{name}: no growing backlog (lag p99 per {LAG_WINDOW_S:.0f} s {windows}): "
        + ("met" if steady and row["drain_s_after_load"] is not None else "not met"),
    ]


def _line(row: dict[str, Any]) -> str:
    lag = row["lag_s"]
    rss = {name: f"{s.get('first_10s_max')}->{s.get('last_10s_max')}"
           for name, s in row["rss_mib"].items()}  # fmt: skip
    return (
        f"evaluators {row['evaluators']}: offered {row['offered_rps']:,.0f}/s achieved "
        f"{row['achieved_rps']:,.0f}/s, ingress p99 {row['ingress_latency_ms']['p99']:.1f} ms; "
        f"lag p50 {lag['p50']} s p99 {lag['p99']} s max {lag['max']} s; "
        f"per {LAG_WINDOW_S:.0f} s p99 {lag[f'p99_per_{LAG_WINDOW_S:.0f}s']}; "
        f"RSS MiB {rss}; evaluator CPU {row['evaluator_cpu_us_per_delivery']:.0f} us/delivery; "
        f"cores per {LAG_WINDOW_S:.0f} s {row['cores_per_10s']}"
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
