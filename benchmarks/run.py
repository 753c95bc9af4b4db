"""The benchmark command.

    python -m benchmarks.run [--quick] [--duration S] [--rounds N] [--workers 1,2]
    python -m benchmarks.run filters [--quick]
    python -m benchmarks.run sustained [--fraction 0.5] [--duration 60] [--evaluators 1,2]

See benchmarks/README.md for what is measured and how.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import end_to_end, loadgen, report
from benchmarks.cases import APPS, Case, companion, run_case, target_env
from benchmarks.requests_file import (
    RATE_LIMIT_PER_MINUTE,
    Plan,
    duplicate_plan,
    flood_plan,
    provider_plan,
    spread_plan,
    write_requests,
)
from benchmarks.seed import AuthMode, Seed, seed
from benchmarks.targets import HTTP_SERVERS, ROOT, Target, serve, split_label
from benchmarks.wrk import CONNECTIONS, THREADS, ensure_wrk
from testbed.redis_server import RedisServer, redis_server

SERVERS = ("ceiling", "gateway-redis", "gateway-embedded", "naive")
SMALL, BIG = 1024, 200 * 1024
LATENCY_FRACTIONS = (0.25, 0.5, 0.8)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    p.add_argument("--quick", action="store_true", help="short: 1 round, fewer webhooks")
    p.add_argument("--duration", type=float, help="seconds per wrk run (default 15, quick 5)")
    p.add_argument("--rounds", type=int, help="A/B rounds for 1 KB (default 3, quick 1)")
    p.add_argument("--big-rounds", type=int, default=1, help="rounds for the 200 KB variant")
    p.add_argument("--workers", help="uvicorn worker counts (default 1,2; quick 1)")
    p.add_argument("--servers", default=",".join(SERVERS), help="subset of " + ",".join(SERVERS))
    p.add_argument(
        "--http",
        default="uvicorn",
        help="HTTP servers every target runs under, A/B in each round: "
        + ",".join(HTTP_SERVERS)
        + " (rows under granian are named kind@granian)",
    )
    p.add_argument(
        "--auth", choices=("signature", "token"), default="signature",
        help="Standard Webhooks signatures (default) or bearer tokens",
    )  # fmt: skip
    p.add_argument("--evaluator", choices=("on", "off"), default="on")
    p.add_argument(
        "--match",
        choices=("all", "none"),
        default="all",
        help="every payload starts one run (all, default) or no automation matches (none)",
    )
    p.add_argument("--max-rate", type=int, default=40_000, help="sizes the request files")
    p.add_argument(
        "--connections", type=int, default=CONNECTIONS, help="wrk keep-alive connections"
    )
    p.add_argument("--drain-wait", type=float, help="max seconds to wait for the evaluator")
    p.add_argument("--no-big", action="store_true", help="skip the 200 KB variant")
    p.add_argument("--big", action="store_true", help="with --quick: keep the 200 KB variant")
    p.add_argument("--no-latency", action="store_true", help="skip the open-loop rows")
    p.add_argument("--no-paths", action="store_true", help="skip the 429 and duplicate rows")
    p.add_argument(
        "--no-provider",
        action="store_true",
        help="skip the provider rows (GitHub deliveries to provider connections, 1 KB)",
    )
    p.add_argument(
        "--profile", action="store_true", help="py-spy the gateway's processes (1 worker)"
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["filters"]:
        return subprocess.call([sys.executable, "-m", "benchmarks.filters_bench", *argv[1:]])
    if argv[:1] == ["sustained"]:
        from benchmarks import sustained

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        ensure_wrk()
        return sustained.main(argv[1:])
    args = parse_args(argv)
    # stopped with SIGTERM: unwind through the `finally` blocks that stop every child process
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ensure_wrk()
    quick = args.quick
    duration = args.duration or (5.0 if quick else 15.0)
    rounds = args.rounds or (1 if quick else 3)
    workers = [int(w) for w in (args.workers or ("1" if quick else "1,2")).split(",") if w]
    servers = [s for s in args.servers.split(",") if s]
    unknown = set(servers) - set(SERVERS)
    if unknown:
        raise SystemExit(f"unknown servers: {sorted(unknown)}")
    https = [h for h in args.http.split(",") if h]
    if not https or set(https) - set(HTTP_SERVERS):
        raise SystemExit(f"--http: expected some of {','.join(HTTP_SERVERS)}")
    labels = [Target(s, APPS[s], http=h).label for s in servers for h in https]
    auth: AuthMode = args.auth
    evaluator = args.evaluator != "off"
    factories, per_factory = (100, 20) if quick else (500, 20)
    automations = 10
    drain_wait = args.drain_wait or (5.0 if quick else 20.0)
    args.no_big = args.no_big or (quick and not args.big)
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    rundir = Path(tempfile.mkdtemp(prefix="bench-run-"))
    notes = _notes(auth, evaluator, automations, args.match)
    for note in notes:
        print("note:", note, flush=True)
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    latency: list[dict[str, Any]] = []
    try:
        t0 = time.monotonic()
        seeded = seed(
            rundir / "template.db",
            factories=factories,
            webhooks_per_factory=per_factory,
            automations_per_webhook=automations,
            auth_mode=auth,
            secret_key=base64.urlsafe_b64decode(key),
        )
        print(
            f"seeded {len(seeded.webhooks)} webhooks in {time.monotonic() - t0:.1f} s", flush=True
        )
        with redis_server() as redis:
            grid = _grid(args, labels, workers, rounds, duration, evaluator, drain_wait, seeded)
            for i, case in enumerate(grid, 1):
                row = run_case(case, seeded, redis, key, rundir)
                rows.append(row)
                _progress(i, len(grid), row)
            if not args.no_latency:
                latency = _latency_rows(
                    rows, labels, seeded, redis, key, rundir, quick, evaluator, rounds
                )
    finally:
        for leftover in rundir.glob("*.db*"):
            leftover.unlink()
    failures = [f"{_label(r)}: {f}" for r in rows for f in r["failures"]]
    failures += [
        f"latency {x['server']} {x['fraction']:.0%}: {f}" for x in latency for f in x["failures"]
    ]
    result: dict[str, Any] = {
        "command": "python -m benchmarks.run " + " ".join(argv),
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "settings": {
            "wrk": f"-t{THREADS} -c{args.connections} -d{duration:.0f}s",
            "uvicorn": "--loop uvloop --http httptools --no-access-log",
            "granian": "--interface asgi --loop uvloop --http 1 --no-ws --no-access-log "
            "(read buffer and header-read deadline of gateway serve)",
            "http_servers": https,
            "duration_s": duration,
            "rounds": rounds,
            "workers": workers,
            "webhooks": len(seeded.webhooks),
            "automations_per_webhook": automations,
            "auth_mode": auth,
            "evaluator": evaluator,
        },
        "notes": notes,
        "groups": report.aggregate(rows),
        "ratios": report.ratios(rows),
        "end_to_end": end_to_end.summarize(rows),
        "latency_under_load": latency,
        "latency_summary": report.latency_summary(latency),
        "rows": rows,
        "failures": failures,
        "wall_s": time.monotonic() - started,
    }
    path = report.write(result)
    print(
        json.dumps({k: result[k] for k in ("command", "settings", "notes", "failures")}, indent=1)
    )
    print()
    print(report.table(result["groups"]))
    print()
    print(report.ratio_table(result["ratios"]))
    if any("evaluator" in r and isinstance(r["evaluator"], dict) for r in rows):
        print()
        print(report.evaluator_table(rows))
    if result["end_to_end"]:
        print()
        print(end_to_end.table(result["end_to_end"]))
    if latency:
        print()
        print(report.latency_table(latency))
        print()
        print(report.latency_summary_table(result["latency_summary"]))
    for row in rows:
        for key, role in (("profile", "serving worker"), ("evaluator_profile", "its evaluator")):
            if key in row:
                print(f"\npy-spy ({row['server']} {row['scenario']}, {role}, under wrk):")
                for title, frames in (
                    ("self", "top_self_pct"),
                    ("the gateway's frames, inclusive", "top_gateway_inclusive_pct"),
                ):
                    print(f"  top {title} %:")
                    for frame, pct in row[key].get(frames, []):
                        print(f"    {pct:5.1f}  {frame}")
    print(f"\nreport: {path}  ({result['wall_s']:.0f} s)")
    for raw in sorted(rundir.glob("*.pyspy.txt")):  # the samples themselves, beside the report
        kept = path.with_name(f"{path.stem}.{raw.name}")
        shutil.move(raw, kept)
        print(f"py-spy samples: {kept}")
    if not failures:
        shutil.rmtree(rundir, ignore_errors=True)
    else:
        print(f"server logs kept in {rundir}")
        for failure in failures:
            print("FAILED:", failure)
        return 1
    return 0


def _notes(auth: str, evaluator: bool, automations: int, match: str) -> list[str]:
    notes = [f"auth mode measured: {auth}"]
    if not evaluator:
        notes.append("evaluator off (--evaluator off)")
    notes.append(f"{automations} automations per webhook")
    if match == "none":
        notes.append("no automation matches any payload (--match none): no runs")
    return notes


def _grid(
    args: argparse.Namespace,
    servers: list[str],
    workers: list[int],
    rounds: int,
    duration: float,
    evaluator: bool,
    drain_wait: float,
    seeded: Seed,
) -> list[Case]:
    count = min(len(seeded.webhooks) * RATE_LIMIT_PER_MINUTE, int(args.max_rate * (duration + 2)))
    cases: list[Case] = []
    sizes = [(SMALL, rounds)] + ([] if args.no_big else [(BIG, args.big_rounds)])
    for body, n_rounds in sizes:
        for w in workers:
            for r in range(n_rounds):
                order = servers[r % len(servers) :] + servers[: r % len(servers)]  # A/B rotation
                for label in order:
                    server, http = split_label(label)
                    if server == "gateway-embedded" and w > 1:
                        continue  # not a valid deployment: limits and de-dup are per process
                    plan = spread_plan(f"{server[:2]}{w}{body}r{r}", len(seeded.webhooks), count)
                    profile = (
                        args.profile and server.startswith("gateway") and w == 1 and body == SMALL
                    )
                    cases.append(
                        Case(Target(server, APPS[server], http=http), w, plan, body, duration,
                             r + 1, evaluator, drain_wait, profile and r == 0, args.connections,
                             args.match == "all")
                    )  # fmt: skip
                    if server.startswith("gateway") and body == SMALL and not args.no_provider:
                        # the same spread of GitHub deliveries over as many provider
                        # connections, right after it (A/B against the custom-webhook row)
                        tag = f"{server[:2]}{w}{body}r{r}p"
                        github = provider_plan(tag, len(seeded.connections), count)
                        cases.append(
                            Case(Target(server, APPS[server], http=http), w, github, body,
                                 duration, r + 1, evaluator, drain_wait, profile and r == 0,
                                 connections=args.connections, matching=args.match == "all")
                        )  # fmt: skip
    if not args.no_paths:
        short = min(duration, 5.0)
        paths: list[Plan] = [
            flood_plan("flood", int(args.max_rate * (short + 2))),
            # every webhook: at most 60 requests each (the Redis window counts duplicates), so
            # the file must be long enough that a fast server never wraps around it
            duplicate_plan("dup", len(seeded.webhooks), int(args.max_rate * (short + 2))),
        ]
        for label in (s for s in servers if s.startswith("gateway")):
            server, http = split_label(label)
            for plan in paths:
                cases.append(
                    Case(Target(server, APPS[server], http=http), 1, plan, SMALL, short, 1,
                         evaluator, drain_wait, connections=args.connections,
                         matching=args.match == "all")
                )  # fmt: skip
    return cases


def _latency_rows(
    rows: list[dict[str, Any]],
    servers: list[str],
    seeded: Seed,
    redis: RedisServer,
    key: str,
    rundir: Path,
    quick: bool,
    evaluator: bool,
    rounds: int,
) -> list[dict[str, Any]]:
    """Open-loop p99 at 25/50/80% of the measured maximum, 1 worker, 1 KB; each rate `rounds`
    times (servers alternating), as one 10 s sample of a p99 varies a lot on a shared machine."""
    seconds = 5.0 if quick else 10.0
    native = loadgen.build(rundir)
    tops: dict[str, float] = {}
    for name in (s for s in servers if split_label(s)[0] in ("gateway-redis", "ceiling")):
        measured = [
            r["rps"] for r in rows
            if r["server"] == name and r["workers"] == 1 and r["scenario"] == "spread"
            and r["body_bytes"] == SMALL and not r["failures"]
        ]  # fmt: skip
        if measured:
            tops[name] = sorted(measured)[len(measured) // 2]
    out: list[dict[str, Any]] = []
    for r in range(rounds):
        for fraction in LATENCY_FRACTIONS:
            for server, top in tops.items():
                item = _latency_row(
                    server, fraction, top, seeded, redis, key, rundir, seconds, evaluator, native
                )
                item["round"] = r + 1
                out.append(item)
                if "latency_ms" in item:
                    print(
                        f"latency {server} {fraction:.0%} r{r + 1}: offered "
                        f"{item['offered_rps']:.0f}/s achieved {item['achieved_rps']:.0f}/s "
                        f"p99 {item['latency_ms']['p99']:.2f} ms",
                        flush=True,
                    )
    return out


def _latency_row(
    server: str,
    fraction: float,
    top: float,
    seeded: Seed,
    redis: RedisServer,
    key: str,
    rundir: Path,
    seconds: float,
    evaluator: bool,
    native: Path,
) -> dict[str, Any]:
    """One fixed rate against a fresh server, store and Redis (rate windows start empty)."""
    from benchmarks.cases import prepare_store

    label, (server, http) = server, split_label(server)
    rate = round(top * fraction, 1)
    count = int(rate * (seconds + loadgen.WARMUP_S)) + 1
    plan = spread_plan(
        f"lat{fraction}", len(seeded.webhooks), count, rate_limited=server != "ceiling"
    )
    name = f"latency-{label.replace('@', '-')}-{fraction}"
    database = prepare_store(seeded, rundir, name)
    redis.flush()
    env = target_env(server, database, redis, key, evaluator)
    target = Target(server, APPS[server], env, companion(server, evaluator), http)
    with serve(target, 1, rundir) as running:
        path = rundir / f"{name}.requests"
        write_requests(path, plan, seeded.webhooks, seeded.auth_mode, SMALL,
                       f"127.0.0.1:{running.port}")  # fmt: skip
        done = subprocess.run(
            loadgen.command(native, running.port, path, rate, seconds),
            capture_output=True, text=True, timeout=loadgen.timeout(seconds), check=False, cwd=ROOT,
        )  # fmt: skip
        path.unlink(missing_ok=True)
    database.unlink(missing_ok=True)
    if done.returncode != 0:
        return {"server": label, "fraction": fraction, "failures": [done.stderr[-500:]]}
    item: dict[str, Any] = json.loads(done.stdout)
    item.update(server=label, fraction=fraction, max_rps=top)
    item["failures"] = loadgen.failures(item)
    if item["achieved_rps"] < 0.95 * rate:
        item["note"] = "achieved rate below 95% of offered: the server could not keep up"
    return item


def _label(row: dict[str, Any]) -> str:
    return (
        f"{row['server']} w{row['workers']} {row['scenario']} {row['body_bytes']}B r{row['round']}"
    )


def _progress(i: int, total: int, row: dict[str, Any]) -> None:
    status = "FAILED: " + "; ".join(row["failures"]) if row["failures"] else "ok"
    print(
        f"[{i}/{total}] {_label(row)}: {row['rps']:.0f} req/s p99 {row['latency_ms']['p99']:.2f} ms"
        f" cpu {row['server_cpu_s_per_1k']:.3f} s/1k{_redis_cpu(row)}"
        f" wrk {row['loadgen_cpu_s_per_1k']:.3f} s/1k, {row['host_busy_cores']:.2f} cores busy"
        f" {row['statuses']} {status}",
        flush=True,
    )


def _redis_cpu(row: dict[str, Any]) -> str:
    redis = row.get("redis_cpu_s_per_1k")
    return f" redis {redis:.3f} s/1k" if redis is not None else ""


if __name__ == "__main__":
    sys.exit(main())
