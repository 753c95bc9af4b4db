"""One measured case: a fresh store copy, a flushed Redis, a freshly signed request file, one
server process tree, one wrk run, then the server's own records checked against wrk's counts."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import accounting, profiling
from benchmarks.requests_file import RATE_LIMIT_PER_MINUTE, Plan, write_requests
from benchmarks.seed import Seed
from benchmarks.targets import EVALUATOR, Running, Target, serve
from benchmarks.wrk import CONNECTIONS, WrkResult, run_wrk
from testbed.procs import children_cpu_seconds, cpu_seconds, host_cpu, peak_rss_kib
from testbed.redis_server import RedisServer

REDIS_PREFIX = "gw"


@dataclass(frozen=True, slots=True)
class Case:
    target: Target
    workers: int
    plan: Plan
    body_size: int
    duration_s: float
    round: int
    evaluator: bool
    drain_wait_s: float
    profile: bool = False
    connections: int = CONNECTIONS  # wrk's keep-alive connections
    matching: bool = True  # every payload starts one run (else: no automation matches)


def prepare_store(seed: Seed, rundir: Path, name: str) -> Path:
    database = rundir / f"{name}.db"
    shutil.copyfile(seed.database, database)
    return database


def remove_store(database: Path) -> None:
    """The SQLite file and what lives beside it (WAL, the embedded outbox and its WAL)."""
    for suffix in ("", "-wal", "-shm", "-outbox", "-outbox-wal", "-outbox-shm", "-writer.lock"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)


GRID_MAX_BACKLOG = 2_000_000


def target_env(
    kind: str, database: Path, redis: RedisServer, key: str, evaluator: bool
) -> dict[str, str]:
    if kind == "ceiling":
        return {}
    if kind == "naive":
        return {
            "NAIVE_DATABASE": str(database),
            "NAIVE_REDIS_URL": redis.url,
            "GATEWAY_SECRET_KEY": key,
        }
    env = {
        "GATEWAY_DATABASE_URL": f"sqlite:///{database}",
        "GATEWAY_REDIS_PREFIX": REDIS_PREFIX,
        "GATEWAY_SECRET_KEY": key,
        # the evaluator in its own process (started beside the server, see `companion`), as
        # `gateway serve` runs it by default
        "GATEWAY_EVALUATOR": "process" if evaluator else "off",
        "GATEWAY_LOG_LEVEL": "warning",
        # GATEWAY_ACCESS_LOG as shipped (`on`): accepted deliveries counted, not a line each
        # the grid measures what ingress accepts at full load, where the evaluator falls behind
        # by design; at the default bound (100,000) a 15 s run would end in 503 backlog_full
        # answers, which cost ingress almost nothing and would flatter its figure
        "GATEWAY_MAX_BACKLOG": str(GRID_MAX_BACKLOG),
    }
    if kind == "gateway-redis":
        env["GATEWAY_REDIS_URL"] = redis.url
    return env


APPS = {
    "ceiling": "benchmarks.servers.ceiling:create_app",
    "naive": "benchmarks.servers.naive:create_app",
    "gateway-redis": "gateway.composition.app:app_from_environment",
    "gateway-embedded": "gateway.composition.app:app_from_environment",
}


def companion(kind: str, evaluator: bool) -> tuple[str, ...]:
    return EVALUATOR if kind.startswith("gateway") and evaluator else ()


def run_case(case: Case, seed: Seed, redis: RedisServer, key: str, rundir: Path) -> dict[str, Any]:
    kind, label = case.target.kind, case.target.label
    name = label.replace("@", "-") + f"-w{case.workers}-{case.plan.name}-{case.body_size}"
    name += f"-r{case.round}"
    database = prepare_store(seed, rundir, name)
    redis.flush()
    env = target_env(kind, database, redis, key, case.evaluator)
    target = Target(kind, APPS[kind], env, companion(kind, case.evaluator), case.target.http)
    request_file = rundir / f"{name}.requests"
    with serve(target, case.workers, rundir) as running:
        write_requests(
            request_file,
            case.plan,
            seed.connections if case.plan.name == "provider" else seed.webhooks,
            seed.auth_mode,
            case.body_size,
            f"127.0.0.1:{running.port}",
            case.matching,
        )
        pids = running.pids()
        redis_pids = [redis.proc.pid] if redis.proc is not None else []
        evaluator_pids = running.companion_pids()
        start = evaluator_started(evaluator_pids)
        cpu0, redis0 = cpu_seconds(pids), cpu_seconds(redis_pids)
        eval0 = cpu_seconds(evaluator_pids)
        # py-spy on every Python process of the case: the serving worker and its evaluator
        # (Redis is C: its share is the CPU column)
        spied = {"server": running.worker_pids()[0]}
        if evaluator_pids:
            spied["evaluator"] = evaluator_pids[0]
        spies = {}
        for role, pid in spied.items() if case.profile else ():
            out = rundir / f"{name}.{role}.pyspy.txt"
            spies[role] = (out, profiling.start_record(pid, case.duration_s - 1, out))
        started = time.monotonic()
        host0, wrk0 = host_cpu(), children_cpu_seconds()
        result = run_wrk(
            f"http://127.0.0.1:{running.port}", request_file, case.duration_s, case.connections
        )
        host1, wrk1 = host_cpu(), children_cpu_seconds()
        cpu1, redis1 = cpu_seconds(pids), cpu_seconds(redis_pids)
        eval1 = cpu_seconds(evaluator_pids)
        profiles = {role: profiling.finish_record(spy, out) for role, (out, spy) in spies.items()}
        rss = peak_rss_kib(pids)
        worker_rss = max(peak_rss_kib([pid]) for pid in running.worker_pids())
        records = _records(case, running, redis, database, result, started)
        cpu2, redis2 = cpu_seconds(pids), cpu_seconds(redis_pids)
        eval2 = cpu_seconds(evaluator_pids)
        evaluator_rss = peak_rss_kib(evaluator_pids) if evaluator_pids else None
    request_file.unlink(missing_ok=True)
    remove_store(database)
    per_k = 1000.0 / result.requests if result.requests else 0.0
    row: dict[str, Any] = {
        "server": label,
        "http_server": case.target.http,
        "workers": case.workers,
        "scenario": case.plan.name,
        "body_bytes": case.body_size,
        "round": case.round,
        "auth_mode": seed.auth_mode,
        "evaluator": case.evaluator if case.target.is_gateway else None,
        "matching": case.matching,
        "rps": result.rps,
        "requests": result.requests,
        "duration_s": result.duration_s,
        "latency_ms": result.latency_ms,
        "statuses": {str(k): v for k, v in sorted(result.statuses.items())},
        "socket_errors": result.errors,
        "wraps": result.wraps,
        "in_flight_at_stop": max(0, result.sent - result.requests),
        "server_cpu_s_per_1k": (cpu1 - cpu0) * per_k,
        "redis_cpu_s_per_1k": (redis1 - redis0) * per_k if case.target.uses_redis else None,
        "server_cpu_s_drain": cpu2 - cpu1,
        "redis_cpu_s_drain": redis2 - redis1 if case.target.uses_redis else None,
        "evaluator_cpu_s_per_1k": (eval1 - eval0) * per_k if evaluator_pids else None,
        "evaluator_cpu_s_drain": eval2 - eval1 if evaluator_pids else None,
        # its start (imports, the store opened, every webhook's automations compiled), before
        # the load: a long-running evaluator has done it once, not per delivery
        "evaluator_start_cpu_s": start.cpu_s if start else None,
        "evaluator_start_s": start.wall_s if start else None,
        # where the machine's cores went: the load generator shares them with the server
        "loadgen_cpu_s_per_1k": (wrk1 - wrk0) * per_k,
        "host_busy_cores": _busy_cores(host0, host1),
        "peak_rss_mib": rss / 1024,
        "peak_rss_mib_per_worker": worker_rss / 1024,
        "evaluator_peak_rss_mib": evaluator_rss / 1024 if evaluator_rss else None,
        **records,
    }
    if "server" in profiles:
        row["profile"] = profiles["server"]
    if "evaluator" in profiles:
        row["evaluator_profile"] = profiles["evaluator"]
    row["failures"] = check(case, row, result)
    return row


@dataclass(frozen=True, slots=True)
class EvaluatorStart:
    cpu_s: float  # the evaluator's CPU from its start until it settled
    wall_s: float  # how long the wait for it took


# the evaluator has started once it uses less than this share of a core, or after START_WAIT_S
IDLE_SHARE = 0.05
START_WAIT_S = 120.0


def evaluator_started(pids: list[int], poll_s: float = 0.25) -> EvaluatorStart | None:
    """Waits until the evaluator has finished starting: it compiles every webhook's automations
    before it reads a delivery (the grid's 10,000 webhooks: ~5 s of CPU with its imports and
    store), and measured under the load, that start would be counted as the deliveries' cost."""
    if not pids:
        return None
    started = time.monotonic()
    before = cpu_seconds(pids)
    while time.monotonic() - started < START_WAIT_S:
        time.sleep(poll_s)
        now = cpu_seconds(pids)
        if now - before < IDLE_SHARE * poll_s:
            return EvaluatorStart(now, time.monotonic() - started)
        before = now
    print(f"note: the evaluator was still busy after {START_WAIT_S:.0f} s; measuring anyway")
    return EvaluatorStart(cpu_seconds(pids), time.monotonic() - started)


def _busy_cores(before: tuple[float, float], after: tuple[float, float]) -> float | None:
    total = after[1] - before[1]
    return (after[0] - before[0]) / total * (os.cpu_count() or 1) if total > 0 else None


def _records(
    case: Case,
    running: Running,
    redis: RedisServer,
    database: Path,
    result: WrkResult,
    started: float,
) -> dict[str, Any]:
    kind = case.target.kind
    if kind == "ceiling":
        return {"recorded_accepted": None}
    if kind == "naive":
        with redis.client() as client:
            return {"recorded_accepted": accounting.naive_stream_entries(client)}
    if case.evaluator:
        drain = accounting.wait_for_drain(
            database,
            expected_accepted(case, result)[0],
            started,
            result.duration_s,
            case.drain_wait_s,
        )
        recorded = drain.final.accepted
        recorded_in = "sql deliveries (after drain)"
        if drain.drain_s is None:  # not drained: count what waits too, without double counting
            client = redis.client() if kind == "gateway-redis" else None
            try:
                recorded = accounting.accepted_anywhere(client, REDIS_PREFIX, database)
            finally:
                if client is not None:
                    client.close()
            recorded_in = "sql deliveries + still queued (stream / pending), not drained"
        return {
            "recorded_accepted": recorded,
            "recorded_in": recorded_in,
            "evaluator": {
                "deliveries_evaluated_per_s": drain.evaluated_per_s,
                "runs_created_per_s": drain.runs_per_s,
                "runs_or_follow_ups_per_s": drain.work_per_s,
                "deliveries_evaluated": drain.final.accepted,
                "runs_created": drain.final.runs,
                "follow_ups": drain.final.follow_ups,
                "backlog_at_end": drain.backlog_at_end,
                "drain_s": drain.drain_s,
                "drain_wait_s": case.drain_wait_s,
                "deliveries_with_two_runs": accounting.doubled_deliveries(database),
            },
        }
    if kind == "gateway-redis":
        with redis.client() as client:
            accepted = accounting.gateway_stream_accepted(client, REDIS_PREFIX)
        return {"recorded_accepted": accepted, "recorded_in": "redis streams (evaluator off)"}
    counts = accounting.store_counts(database)
    return {"recorded_accepted": counts.pending, "recorded_in": "sql log, pending (evaluator off)"}


def expected_accepted(case: Case, result: WrkResult) -> tuple[int, int]:
    """The range of accepted deliveries the server should have recorded."""
    if case.plan.name == "flood":
        return RATE_LIMIT_PER_MINUTE, RATE_LIMIT_PER_MINUTE
    if case.plan.name == "duplicate":
        targets = case.plan.targets
        sent = targets if result.wraps else targets[: max(result.sent, 0)]
        low = len({delivery_id for _, delivery_id in targets[: result.requests]})
        return low, len({delivery_id for _, delivery_id in sent})
    # wrk stops with requests in flight: the server may have accepted them unseen by wrk
    accepted_202 = result.statuses.get(202, 0)
    return accepted_202, accepted_202 + max(0, result.sent - result.requests)


def check(case: Case, row: dict[str, Any], result: WrkResult) -> list[str]:
    """Everything that makes the row's figures untrustworthy, as sentences."""
    failures: list[str] = []
    statuses = result.statuses
    allowed = {202, 429} if case.plan.name == "flood" else {202}
    unexpected = {s: n for s, n in statuses.items() if s not in allowed}
    if unexpected:
        failures.append(f"unexpected statuses {unexpected}")
    if result.requests == 0:
        failures.append("no responses")
    errors = {k: v for k, v in result.errors.items() if v and k != "status"}
    if errors:
        failures.append(f"socket errors {errors}")
    recorded = row.get("recorded_accepted")
    if recorded is None:
        return failures
    if result.wraps and case.plan.name in ("spread", "duplicate"):
        failures.append(
            f"request file exhausted ({result.wraps} wraps): repeated delivery ids; "
            "raise --max-rate"
        )
    accepted_202 = statuses.get(202, 0)
    if case.plan.name == "flood" and accepted_202 > RATE_LIMIT_PER_MINUTE:
        failures.append(f"{accepted_202} answered 202 to one webhook, limit 60/min")
    evaluator = row.get("evaluator")
    if isinstance(evaluator, dict) and evaluator["drain_s"] is not None:
        # drained: one run per accepted delivery when every payload matches, none otherwise (a
        # provider delivery about an issue that has a run already follows that run up instead)
        expected_runs = evaluator["deliveries_evaluated"] if case.matching else 0
        runs, follow_ups = evaluator["runs_created"], evaluator.get("follow_ups", 0)
        if runs + follow_ups != expected_runs:
            failures.append(
                f"{runs} runs created and {follow_ups} follow-ups, expected {expected_runs}"
            )
    if isinstance(evaluator, dict) and evaluator.get("deliveries_with_two_runs"):
        failures.append(f"{evaluator['deliveries_with_two_runs']} deliveries started two runs")
    expected_low, expected_high = expected_accepted(case, result)
    if not expected_low <= recorded <= expected_high:
        failures.append(
            f"recorded accepted {recorded}, expected {expected_low}"
            + (
                f"..{expected_high} (202s + in flight at stop)"
                if expected_high > expected_low
                else ""
            )
        )
    return failures
