"""Runner throughput and start lag, through a real `gateway serve` (SQLite by default).

    python -m benchmarks.runner_bench [--runs 4000] [--runners 8] [--batch 10] [--finish claim]
                                      [--db sqlite] [--port 0]
    python -m benchmarks.runner_bench lag [--deliveries 300] [--rate 50]

Throughput: N QUEUED runs are inserted, then R runner clients (asyncio, HTTP keep-alive, as
many as a fleet of `gateway runner` processes would open) claim up to B runs per call
(wait_s=0) and finish each one SUCCEEDED, until none is left. `--finish claim` (the default):
one POST /runner/finish finishes the runs in hand and claims the next B; `--finish each`: one
POST /runner/runs/{id}/finish per run, then a POST /runner/claim (what a server without the
batch call offers). Reported: runs claimed and finished per second, the server's CPU per run,
and the check that every run ended SUCCEEDED exactly once (the timeline has one CLAIMED and one
SUCCEEDED per run).

Lag: an automation starts one run per delivery; deliveries are sent at a fixed rate while one
real `gateway runner --command true` (concurrency 4) executes them. Reported: the time from
each delivery's receipt (its 202) to its run entering INPROGRESS, p50/p99/max, from the
delivery log and the run timeline.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select

from gateway.foundation.accounts import factories, identities
from gateway.foundation.services import build_services
from gateway.foundation.store import migrate
from gateway.foundation.store import tables as t
from gateway.kernel.settings import load_settings
from gateway.platform.runs.creation.new_runs import NewRun, insert_run
from testbed.postgres import temporary_database
from testbed.procs import cpu_seconds, free_port, process_tree, spawn, stop, wait_port

ROOT = Path(__file__).resolve().parent.parent


def _env(database_url: str, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    env.update(
        GATEWAY_DATABASE_URL=database_url,
        GATEWAY_SECRET_KEY=base64.urlsafe_b64encode(b"b" * 32).decode(),
        GATEWAY_WEBHOOK_BASE_URL=f"http://127.0.0.1:{port}",
        GATEWAY_LOG_LEVEL="warning",
        PYTHONPATH=str(ROOT),
        **extra,
    )
    return env


async def _seed(env: dict[str, str], runs: int) -> dict[str, str]:
    settings = load_settings(env)
    services = build_services(settings)
    try:
        await migrate(services.database)
        async with services.database.transaction() as conn:
            team = await identities.create_team(conn, "bench")
            _, user_key = await identities.create_user(conn, team, "bench@example.com")
            agent, agent_key = await identities.create_agent(conn, team, "runner")
            factory = await factories.create_factory(conn, team, "F", None, agent)
            for n in range(runs):  # created in order: runners claim them oldest first
                await insert_run(conn, NewRun(prompt=f"job {n}", team_uid=team))
        return {"team": team, "user_key": user_key, "agent_key": agent_key, "factory": factory}
    finally:
        await services.close()


async def _runner_client(url: str, key: str, args: argparse.Namespace, done: list[int]) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=f"{url}/api/v1", headers=headers, timeout=60) as http:
        registered = await http.post("/runner/register", json={"name": "bench"})
        runner = registered.json()["runner_uid"]
        claim = {"runner_uid": runner, "max_runs": args.batch, "wait_s": 0}
        runs = (await http.post("/runner/claim", json=claim)).json()["runs"]
        while runs:
            if args.finish == "each":
                runs = await _finish_each(http, runner, runs, claim, done)
            else:
                runs = await _finish_and_claim(http, runner, runs, args.batch, done)


async def _finish_each(
    http: httpx.AsyncClient,
    runner: str,
    runs: list[dict[str, Any]],
    claim: dict[str, Any],
    done: list[int],
) -> list[dict[str, Any]]:
    """One finish call per run, then a claim call."""
    for run in runs:
        finish = {"runner_uid": runner, "outcome": "SUCCEEDED", "status_message": "ok"}
        answer = await http.post(f"/runner/runs/{run['run_id']}/finish", json=finish)
        if answer.status_code != 200:
            raise RuntimeError(f"finish answered {answer.status_code}: {answer.text}")
        done[0] += 1
    claimed: list[dict[str, Any]] = (await http.post("/runner/claim", json=claim)).json()["runs"]
    return claimed


async def _finish_and_claim(
    http: httpx.AsyncClient, runner: str, runs: list[dict[str, Any]], batch: int, done: list[int]
) -> list[dict[str, Any]]:
    """One call finishes the runs in hand and claims the next ones."""
    ending = {"outcome": "SUCCEEDED", "status_message": "ok"}
    body = {
        "runner_uid": runner,
        "runs": [{"run_id": run["run_id"], **ending} for run in runs],
        "claim": batch,
        "wait_s": 0,
    }
    answer = await http.post("/runner/finish", json=body)
    if answer.status_code != 200:
        raise RuntimeError(f"finish answered {answer.status_code}: {answer.text}")
    result = answer.json()
    failed = [item for item in result["finished"] if not item["ok"]]
    if failed:
        raise RuntimeError(f"runs not finished: {failed}")
    done[0] += len(result["finished"])
    claimed: list[dict[str, Any]] = result["runs"]
    return claimed


async def _check(env: dict[str, str], runs: int) -> dict[str, Any]:
    services = build_services(load_settings(env))
    try:
        async with services.database.read() as conn:
            states: dict[str, int] = dict(
                (
                    await conn.execute(
                        select(t.runs.c.state, func.count()).group_by(t.runs.c.state)
                    )
                ).all()
            )
            events: dict[str, int] = dict(
                (
                    await conn.execute(
                        select(t.run_events.c.state, func.count()).group_by(t.run_events.c.state)
                    )
                ).all()
            )
    finally:
        await services.close()
    ok = states == {"SUCCEEDED": runs} and events.get("CLAIMED") == events.get("SUCCEEDED") == runs
    return {"ok": ok, "states": states, "events": events}


def throughput(args: argparse.Namespace, database_url: str, workdir: Path) -> dict[str, Any]:
    port = args.port or free_port()
    env = _env(database_url, port, GATEWAY_EVALUATOR="off")
    keys = asyncio.run(_seed(env, args.runs))
    server = spawn([sys.executable, "-m", "gateway", "serve", "--port", str(port)], env=env,
                   log=workdir / "server.log", cwd=ROOT)  # fmt: skip
    try:
        wait_port(port, server)
        url = f"http://127.0.0.1:{port}"
        done = [0]
        cpu0, started = cpu_seconds(process_tree(server.pid)), time.monotonic()

        async def fleet() -> None:
            key = keys["agent_key"]
            clients = [_runner_client(url, key, args, done) for _ in range(args.runners)]
            await asyncio.gather(*clients)

        asyncio.run(fleet())
        elapsed = time.monotonic() - started
        cpu = cpu_seconds(process_tree(server.pid)) - cpu0
    finally:
        stop(server)
    check = asyncio.run(_check(env, args.runs))
    return {
        "case": "claim + finish",
        "db": args.db,
        "runs": args.runs,
        "runners": args.runners,
        "batch": args.batch,
        "finish": args.finish,
        "elapsed_s": round(elapsed, 2),
        "runs_per_s": round(done[0] / elapsed, 1),
        "server_cpu_us_per_run": round(cpu / max(1, done[0]) * 1e6, 1),
        "check": check,
    }


def lag(args: argparse.Namespace, database_url: str, workdir: Path) -> dict[str, Any]:
    port = args.port or free_port()
    env = _env(database_url, port)
    keys = asyncio.run(_seed(env, 0))
    server = spawn([sys.executable, "-m", "gateway", "serve", "--port", str(port)], env=env,
                   log=workdir / "server.log", cwd=ROOT)  # fmt: skip
    runner = None
    try:
        wait_port(port, server)
        url = f"http://127.0.0.1:{port}"
        user = {"Authorization": f"Bearer {keys['user_key']}"}
        factory = f"{url}/api/v1/factory/{keys['factory']}"
        ingress_url = _webhook_with_automation(factory, user, "lag0")
        runner_env = env | {"GATEWAY_API_URL": url, "GATEWAY_RUNNER_KEY": keys["agent_key"]}
        runner = spawn([sys.executable, "-m", "gateway", "runner", "--command", "true",
                        "--concurrency", "4"], env=runner_env, log=workdir / "runner.log",
                       cwd=ROOT)  # fmt: skip
        time.sleep(2.0)  # registered and long-polling
        with httpx.Client(timeout=10) as client:
            for n in range(args.deliveries):
                sent = time.monotonic()
                client.post(ingress_url, json={"n": n}).raise_for_status()
                if (n + 1) % 60 == 0 and n + 1 < args.deliveries:
                    # a webhook takes 60 deliveries a minute: a fresh one for the next 60
                    ingress_url = _webhook_with_automation(factory, user, f"lag{n + 1}")
                time.sleep(max(0.0, 1.0 / args.rate - (time.monotonic() - sent)))
        lags = _wait_for_lags(env, args.deliveries)
    finally:
        if runner is not None:
            stop(runner)
        stop(server)
    return {
        "case": "202 -> run INPROGRESS",
        "db": args.db,
        "deliveries": args.deliveries,
        "rate": args.rate,
        "started": len(lags),
        "lag_ms": {
            "p50": round(statistics.median(lags) * 1000, 1),
            "p99": round(sorted(lags)[int(len(lags) * 0.99) - 1] * 1000, 1),
            "max": round(max(lags) * 1000, 1),
        },
    }


def _webhook_with_automation(factory: str, user: dict[str, str], name: str) -> str:
    """A url-token webhook whose automation starts one run per delivery; its ingress URL."""
    hook = httpx.post(
        f"{factory}/webhooks", headers=user, json={"name": name, "auth_mode": "url_token"}
    ).json()
    trigger = {"provider": "webhook", "event": "received", "filter": {"webhook_ids": [hook["uid"]]}}
    automation = {"name": name, "prompt": "p", "triggers": [trigger]}
    httpx.post(f"{factory}/automations", headers=user, json=automation).raise_for_status()
    return str(hook["ingress_url"])


def _wait_for_lags(env: dict[str, str], expected: int, timeout: float = 120.0) -> list[float]:
    async def read() -> list[float]:
        services = build_services(load_settings(env))
        d, r, e = t.deliveries, t.runs, t.run_events
        query = (
            select(d.c.received_at, func.min(e.c.at))
            .select_from(d.join(r, r.c.delivery_id == d.c.delivery_id))
            .join(e, (e.c.run_id == r.c.run_id) & (e.c.state == "INPROGRESS"))
            .group_by(r.c.run_id, d.c.received_at)
        )
        try:
            async with services.database.read() as conn:
                return [
                    (started - received).total_seconds()
                    for received, started in (await conn.execute(query)).all()
                ]
        finally:
            await services.close()

    deadline = time.monotonic() + timeout
    while True:
        lags = asyncio.run(read())
        if len(lags) >= expected or time.monotonic() > deadline:
            return lags
        time.sleep(1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.runner_bench")
    parser.add_argument("case", nargs="?", choices=("throughput", "lag"), default="throughput")
    parser.add_argument("--runs", type=int, default=4000)
    parser.add_argument("--runners", type=int, default=8)
    parser.add_argument("--batch", type=int, default=10, help="runs per claim call")
    parser.add_argument(
        "--finish",
        choices=("claim", "each"),
        default="claim",
        help="claim: one POST /runner/finish finishes the runs in hand and claims the next "
        "(default); each: one POST /runner/runs/{id}/finish per run, then a claim",
    )
    parser.add_argument("--deliveries", type=int, default=300)
    parser.add_argument("--rate", type=float, default=50.0, help="deliveries per second")
    parser.add_argument("--port", type=int, default=0, help="the server's port (default: any free)")
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args(argv)
    case = throughput if args.case == "throughput" else lag
    with tempfile.TemporaryDirectory(prefix="runner-bench-") as tmp:
        workdir = Path(tmp)
        if args.db == "sqlite":
            result = case(args, f"sqlite:///{workdir}/bench.db", workdir)
        else:
            with temporary_database("gwbench_runner") as url:
                result = case(args, url, workdir)
    print(json.dumps(result, indent=1))
    check = result.get("check")
    return 0 if check is None or check["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
