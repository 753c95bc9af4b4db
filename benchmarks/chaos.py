"""Fault injection against real processes: nothing accepted is lost, no run is started twice.

    python -m benchmarks.chaos [--scenarios a,b] [--lock-seconds 45]
    (scripts/chaos is the same command)

Each scenario starts its own `gateway serve` (evaluator as it runs by default), its own
redis-server with AOF on a free port and its own SQLite store, creates one factory with 20 token
webhooks and one filter-less automation each through the API, then sends deliveries with unique
X-Service-Delivery-Id values while the fault happens. A sender retries a 503, a 5xx or a
connection failure with the same delivery id, as docs/ingress.md tells senders to. At the end
the evaluator is given time to drain, and the store is read:

    sent    distinct delivery ids sent
    202     of those, answered 202 at least once
    logged  of those, logged `Accepted` in the deliveries table
    runs    runs started for them (one filter-less automation per webhook: one run each)

It fails (exit 1) when a delivery answered 202 is not logged, a delivery id is logged Accepted
twice, or any logged delivery has other than exactly one run. An id logged but never answered
202 (its every answer was a 503 or lost) is allowed and counted as `unanswered`: a retry with
the same id would have been answered 202 with the first delivery id.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from testbed.procs import free_port, process_tree, spawn, stop, wait_port

RATE_PER_S = 12  # deliveries per second in all: 20 webhooks stay far below 60 per minute each
WEBHOOKS = 20
SENDERS = 4
DRAIN_S = 90.0  # an evaluator killed mid-batch leaves entries that are reclaimed after 30 s idle


@dataclass
class Tally:
    sent: set[str] = field(default_factory=set)
    accepted: dict[str, str] = field(default_factory=dict)  # identity -> first delivery id
    statuses: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, status: str) -> None:
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1


@dataclass
class Stack:
    """The processes of one scenario."""

    root: Path
    env: dict[str, str]
    redis_port: int | None
    port: int = 0
    gateway: subprocess.Popen[bytes] | None = None
    redis: subprocess.Popen[bytes] | None = None
    logs: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start_redis(self) -> None:
        assert self.redis_port is not None
        argv = [
            "redis-server",
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.redis_port),
            "--dir",
            str(self.root),
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
        ]
        self.redis = spawn(argv, log=self._log("redis"))
        wait_port(self.redis_port, self.redis)

    def start_gateway(self) -> None:
        self.port = self.port or free_port()
        argv = [
            sys.executable,
            "-m",
            "gateway",
            "serve",
            "--port",
            str(self.port),
        ]
        self.gateway = spawn(argv, env=self.env, log=self._log("gateway"), cwd=self.root)
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{self.base}/api/v1/nope", timeout=1)
                return
            except httpx.TransportError:
                if self.gateway.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"gateway did not start; see {self.root}") from None
                time.sleep(0.2)

    def evaluator_pid(self) -> int | None:
        assert self.gateway is not None
        for pid in process_tree(self.gateway.pid)[1:]:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"\0worker\0" in cmdline:
                return pid
        return None

    def _log(self, name: str) -> Path:
        self.logs += 1
        return self.root / f"{self.logs:02d}-{name}.log"

    def stop(self) -> None:
        for proc in (self.gateway, self.redis):
            if proc is not None:
                stop(proc, timeout=20)


def gateway_env(root: Path, redis_port: int | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    env.update(
        GATEWAY_DATABASE_URL=f"sqlite:///{root}/gateway.db",
        GATEWAY_SECRET_KEY=base64.urlsafe_b64encode(os.urandom(32)).decode(),
        GATEWAY_LOG_LEVEL="warning",
    )
    if redis_port is not None:
        env.update(GATEWAY_REDIS_URL=f"redis://127.0.0.1:{redis_port}/0", GATEWAY_REDIS_PREFIX="gc")
    return env


def provision(stack: Stack) -> list[tuple[str, str]]:
    """A factory with WEBHOOKS token webhooks and one automation each: [(uid, token)]."""
    demo = subprocess.run(
        [sys.executable, "-m", "gateway", "admin", "demo"],
        env=stack.env,
        cwd=stack.root,
        capture_output=True,
        check=True,
        text=True,
    )
    ids = json.loads(demo.stdout)
    auth = {"Authorization": f"Bearer {ids['user_api_key']}"}
    hooks = []
    with httpx.Client(
        base_url=f"{stack.base}/api/v1/factory/{ids['factory_uid']}", headers=auth, timeout=30
    ) as api:
        for n in range(WEBHOOKS):
            made = api.post("/webhooks", json={"name": f"chaos {n}", "auth_mode": "token"})
            made.raise_for_status()
            uid, token = made.json()["uid"], made.json()["secret"]
            trigger = {"provider": "webhook", "event": "received", "filter": {"webhook_ids": [uid]}}
            api.post(
                "/automations",
                json={"name": f"run {n}", "prompt": "p", "enabled": True, "triggers": [trigger]},
            ).raise_for_status()
            hooks.append((uid, token))
    return hooks


def send_load(
    stack: Stack, hooks: list[tuple[str, str]], seconds: float, tally: Tally, tag: str
) -> None:
    """SENDERS threads, RATE_PER_S in all, for `seconds`; each id retried until a 202, a 4xx
    or the end of the load (plus a grace period for the retries in flight)."""
    stop_at = time.monotonic() + seconds

    def sender(n: int) -> None:
        interval = SENDERS / RATE_PER_S
        with httpx.Client(timeout=10) as client:
            seq = 0
            while time.monotonic() < stop_at:
                seq += 1
                identity = f"{tag}-{n}-{seq}"
                uid, token = hooks[(n + seq * SENDERS) % len(hooks)]
                with tally.lock:
                    tally.sent.add(identity)
                deliver(client, stack, uid, token, identity, tally, stop_at + 20)
                time.sleep(interval)

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def deliver(
    client: httpx.Client,
    stack: Stack,
    uid: str,
    token: str,
    identity: str,
    tally: Tally,
    give_up_at: float,
) -> None:
    body = json.dumps({"id": identity}).encode()
    headers = {"Authorization": f"Bearer {token}", "X-Service-Delivery-Id": identity}
    while time.monotonic() < give_up_at:
        try:
            answer = client.post(f"{stack.base}/webhooks/w/{uid}", content=body, headers=headers)
        except httpx.TransportError as exc:
            tally.count(type(exc).__name__)
            time.sleep(0.5)
            continue
        tally.count(str(answer.status_code))
        if answer.status_code == 202:
            with tally.lock:
                tally.accepted.setdefault(identity, answer.json()["delivery_id"])
            return
        if answer.status_code < 500:
            return  # a refusal (429 and the like) is final for this test
        time.sleep(float(answer.headers.get("retry-after", "1")))


def wait_drained(stack: Stack, tally: Tally, deadline_s: float) -> None:
    """Until every 202'd id is logged, or the deadline."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        logged, _, _ = read_store(stack.root)
        if set(tally.accepted) <= set(logged):
            time.sleep(2)  # let a batch in progress commit its runs too
            return
        time.sleep(1)


def read_store(root: Path) -> tuple[dict[str, list[str]], dict[str, int], set[str]]:
    """identity -> Accepted delivery ids (evaluated: until then the embedded backend holds them in
    its outbox); delivery id -> runs; identities logged Duplicate."""
    with sqlite3.connect(root / "gateway.db", timeout=60) as db:
        rows = db.execute(
            "SELECT identity, delivery_id FROM deliveries WHERE label = 'Accepted' "
            "AND evaluation = 'evaluated'"
        ).fetchall()
        runs = dict(
            db.execute(
                "SELECT delivery_id, count(*) FROM runs WHERE delivery_id IS NOT NULL "
                "GROUP BY delivery_id"
            )
        )
        duplicates = {
            identity
            for (identity,) in db.execute(
                "SELECT identity FROM deliveries WHERE label = 'Duplicate'"
            )
        }
    logged: dict[str, list[str]] = {}
    for identity, delivery_id in rows:
        logged.setdefault(identity, []).append(delivery_id)
    return logged, runs, duplicates


def verdict(name: str, tally: Tally, root: Path) -> dict[str, object]:
    logged, runs, duplicates = read_store(root)
    ours = {i: ids for i, ids in logged.items() if i in tally.sent}
    lost = sorted(set(tally.accepted) - set(ours))
    twice = sorted(i for i, ids in ours.items() if len(ids) > 1)
    wrong_runs = sorted(i for i, ids in ours.items() if any(runs.get(d, 0) != 1 for d in ids))
    failures = []
    if lost:
        failures.append(f"{len(lost)} deliveries answered 202 are not logged: {lost[:3]}")
    if twice:
        failures.append(f"{len(twice)} delivery ids logged Accepted twice: {twice[:3]}")
    if wrong_runs:
        failures.append(f"{len(wrong_runs)} logged deliveries without exactly one run")
    return {
        "scenario": name,
        "sent": len(tally.sent),
        "202": len(tally.accepted),
        "logged": len(ours),
        "runs": sum(runs.get(d, 0) for ids in ours.values() for d in ids),
        "unanswered": len(set(ours) - set(tally.accepted)),
        # sent again after a 503 or a lost answer, and found recorded already (the retry was
        # answered 202 with the first id): what a 503 after a timeout can mean
        "recorded_before_retry": len(duplicates & set(ours)),
        "statuses": dict(sorted(tally.statuses.items())),
        "failures": failures,
    }


# --- the faults -----------------------------------------------------------------------------


def kill_redis(stack: Stack) -> None:
    assert stack.redis is not None
    os.kill(stack.redis.pid, signal.SIGKILL)
    stack.redis.wait()
    time.sleep(2)
    stack.start_redis()


def kill_gateway(stack: Stack) -> None:
    assert stack.gateway is not None
    os.killpg(stack.gateway.pid, signal.SIGKILL)  # the server and every process it started
    stack.gateway.wait()
    time.sleep(1)
    stack.start_gateway()


def kill_evaluator(stack: Stack) -> None:
    pid = stack.evaluator_pid()
    if pid is None:
        raise RuntimeError("no evaluator child found under gateway serve")
    os.kill(pid, signal.SIGKILL)  # `gateway serve` starts another after its back-off


def stop_redis(stack: Stack) -> None:
    assert stack.redis is not None
    os.kill(stack.redis.pid, signal.SIGSTOP)
    time.sleep(6)  # past the client's 2 s reply watchdog: requests in flight answer 503
    os.kill(stack.redis.pid, signal.SIGCONT)


def lock_sqlite(seconds: float) -> Callable[[Stack], None]:
    def fault(stack: Stack) -> None:
        holder = subprocess.Popen(  # another process holds the write lock
            [
                sys.executable,
                "-c",
                "import sqlite3,sys,time; db=sqlite3.connect(sys.argv[1], isolation_level=None);"
                "db.execute('BEGIN EXCLUSIVE'); time.sleep(float(sys.argv[2])); db.rollback()",
                str(stack.root / "gateway.db"),
                str(seconds),
            ],
        )
        holder.wait()

    return fault


@dataclass(frozen=True)
class Scenario:
    name: str
    redis: bool
    fault: Callable[[Stack], None]
    load_s: float = 12.0
    fault_after_s: float = 3.0


def scenarios(lock_seconds: float) -> list[Scenario]:
    return [
        Scenario("redis-sigkill", True, kill_redis),
        Scenario("gateway-sigkill", True, kill_gateway),
        Scenario("gateway-sigkill-embedded", False, kill_gateway),
        Scenario("evaluator-sigkill", True, kill_evaluator),
        Scenario("redis-sigstop-6s", True, stop_redis),
        Scenario(
            f"sqlite-locked-{lock_seconds:g}s",
            False,
            lock_sqlite(lock_seconds),
            load_s=lock_seconds + 8,
        ),
    ]


@contextmanager
def stack_for(scenario: Scenario) -> Iterator[Stack]:
    root = Path(tempfile.mkdtemp(prefix=f"chaos-{scenario.name}-"))
    redis_port = free_port() if scenario.redis else None
    stack = Stack(root, gateway_env(root, redis_port), redis_port)
    try:
        if scenario.redis:
            stack.start_redis()
        stack.start_gateway()
        yield stack
    finally:
        stack.stop()


def run(scenario: Scenario) -> dict[str, object]:
    tally = Tally()
    with stack_for(scenario) as stack:
        hooks = provision(stack)
        load = threading.Thread(
            target=send_load, args=(stack, hooks, scenario.load_s, tally, scenario.name)
        )
        load.start()
        time.sleep(scenario.fault_after_s)
        scenario.fault(stack)
        load.join()
        wait_drained(stack, tally, DRAIN_S)
        row = verdict(scenario.name, tally, stack.root)
        if not row["failures"]:
            shutil.rmtree(stack.root, ignore_errors=True)
        else:
            row["logs"] = str(stack.root)
    return row


def table(rows: list[dict[str, object]]) -> str:
    lines = [
        "| scenario | sent | 202 | logged | runs | recorded before a retry | never 202 | ok |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ok = "yes" if not r["failures"] else "FAILED"
        lines.append(
            f"| {r['scenario']} | {r['sent']} | {r['202']} | {r['logged']} | "
            f"{r['runs']} | {r['recorded_before_retry']} | {r['unanswered']} | {ok} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/chaos",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--scenarios", help="comma-separated names (default: all)")
    parser.add_argument("--lock-seconds", type=float, default=45.0)
    args = parser.parse_args(argv)
    chosen = scenarios(args.lock_seconds)
    if args.scenarios:
        wanted = args.scenarios.split(",")
        chosen = [s for s in chosen if s.name in wanted or s.name.split("-")[0] in wanted]
    if shutil.which("redis-server") is None:
        raise SystemExit("chaos: redis-server not found (apt-get install -y redis-server)")
    rows = []
    for scenario in chosen:
        row = run(scenario)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    print(table(rows))
    failures = [f"{r['scenario']}: {f}" for r in rows for f in r["failures"]]  # type: ignore[attr-defined]
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
