"""API latency in process: a few representative /api/v1 calls straight through the ASGI app
(no HTTP client or server in the timing), median and p90 over many requests.

    python -m benchmarks.api_latency [--requests 2000] [--baseline SRC_DIR]

With --baseline, the same calls run against another source tree of the gateway (for example
`git archive main | tar -x -C /tmp/main`), each in a subprocess of its own, alternating rounds,
so both are measured in the same session. Prints JSON; exits non-zero (printing FAILED) when a
call answers another status than the one expected.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

CALLS: tuple[tuple[str, str, str, Any, int], ...] = (
    # (name, method, path, body, expected status)
    ("get factory", "GET", "/api/v1/factory/{factory}", None, 200),
    ("list runs", "GET", "/api/v1/agent/runs?limit=20&state=QUEUED", None, 200),
    (
        "create run",
        "POST",
        "/api/v1/agent/runs",
        {"prompt": "Fix the flaky test", "title": "Flaky", "config": {"name": "fixer"}},
        200,
    ),
    ("patch webhook", "PATCH", "/api/v1/factory/{factory}/webhooks/{webhook}", None, 200),
    (
        "invalid automation",
        "POST",
        "/api/v1/factory/{factory}/automations",
        {
            "name": "Review",
            "prompt": "Review the pull request.",
            "triggers": [
                {
                    "provider": "webhook",
                    "event": "received",
                    "filter": {"webhook_ids": ["{webhook}"], "payload": {"action": "opened"}},
                }
            ],
        },
        400,
    ),
)


class App:
    """The gateway app with its lifespan running, called like a server would call it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state: dict[str, Any] = {}
        self._lifespan: asyncio.Task[None] | None = None
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def start(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": self.state}
        self._lifespan = asyncio.create_task(self.app(scope, self._inbox.get, self._outbox.put))
        await self._inbox.put({"type": "lifespan.startup"})
        message = await self._outbox.get()
        assert message["type"] == "lifespan.startup.complete", message

    async def stop(self) -> None:
        await self._inbox.put({"type": "lifespan.shutdown"})
        await self._outbox.get()
        assert self._lifespan is not None
        await self._lifespan

    async def call(self, method: str, url: str, key: str, body: bytes) -> tuple[int, bytes]:
        path, _, query = url.partition("?")
        headers = [(b"authorization", f"Bearer {key}".encode())]
        if body:
            headers.append((b"content-length", str(len(body)).encode()))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("bench", 80),
            "state": dict(self.state),
        }
        sent: list[dict[str, Any]] = []
        given = False

        async def receive() -> dict[str, Any]:
            nonlocal given
            if given:
                await asyncio.sleep(3600)  # a disconnect never comes while the answer is due
            given = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        status = next(m["status"] for m in sent if m["type"] == "http.response.start")
        return status, b"".join(m.get("body", b"") for m in sent if "body" in m)


async def _world(gateway: App) -> tuple[str, str, str]:
    try:
        from gateway.foundation.accounts import factories, identities
    except ImportError:  # a --baseline tree from before the packages by product (2026-11-26)
        from gateway.domain import factories, identities  # type: ignore[no-redef]

    services = gateway.state.get("services") or gateway.app.state.services  # before: app.state
    async with services.database.transaction() as conn:
        team = await identities.create_team(conn, "Bench")
        _, key = await identities.create_user(conn, team, "bench@example.com")
        agent, _ = await identities.create_agent(conn, team, "Foreman")
        factory = await factories.create_factory(conn, team, "Bench", None, agent)
    status, answer = await gateway.call(
        "POST", f"/api/v1/factory/{factory}/webhooks", key, json.dumps({"name": "w"}).encode()
    )
    assert status == 201, answer
    return key, factory, json.loads(answer)["uid"]


async def _measure(requests: int) -> dict[str, Any]:
    from gateway.composition.app import create_app
    from gateway.kernel.settings import load_settings

    directory = tempfile.mkdtemp(prefix="api-latency-")
    settings = load_settings(
        {
            "GATEWAY_DATABASE_URL": f"sqlite:///{directory}/gw.db",
            "GATEWAY_SECRET_KEY": base64.urlsafe_b64encode(b"k" * 32).decode(),
            "GATEWAY_EVALUATOR": "off",
        }
    )
    gateway = App(create_app(settings))
    await gateway.start()
    try:
        key, factory, webhook = await _world(gateway)
        results: dict[str, Any] = {}
        for name, method, path, body, expected in CALLS:
            url = path.format(factory=factory, webhook=webhook)
            if name == "patch webhook":
                body = {"name": "renamed", "enabled": True}
            raw = json.dumps(body).replace("{webhook}", webhook).encode() if body else b""
            timings = []
            for i in range(requests + requests // 10):
                started = time.perf_counter()
                status, answer = await gateway.call(method, url, key, raw)
                elapsed = time.perf_counter() - started
                if status != expected:
                    raise SystemExit(f"FAILED: {name}: {status} {answer[:200]!r}")
                if i >= requests // 10:  # the first tenth warms caches up
                    timings.append(elapsed * 1e6)
            timings.sort()
            results[name] = {
                "median_us": round(statistics.median(timings), 1),
                "p90_us": round(timings[int(len(timings) * 0.9)], 1),
            }
        return results
    finally:
        await gateway.stop()
        shutil.rmtree(directory, ignore_errors=True)


def _child(source: str | None, requests: int) -> dict[str, Any]:
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = source  # found before the installed (editable) gateway
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.api_latency", "--child", "--requests", str(requests)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=source or os.getcwd(),
    )
    if done.returncode != 0:
        raise SystemExit(f"FAILED: {source or 'this tree'}:\n{done.stdout}{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


CALLED = [name for name, *_ in CALLS]


def _spread(results: list[dict[str, float]]) -> dict[str, float]:
    medians = sorted(result["median_us"] for result in results)
    return {"median": statistics.median(medians), "min": medians[0], "max": medians[-1]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", help="source tree of the gateway to compare with")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        import gateway

        result = asyncio.run(_measure(args.requests))
        print(json.dumps({"gateway": gateway.__file__, "calls": result}))
        return
    trees = {"this tree": None} | ({"baseline": args.baseline} if args.baseline else {})
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for turn in range(args.rounds):
        order = list(trees.items())
        for name, source in order if turn % 2 == 0 else order[::-1]:  # neither always goes first
            rounds[name].append(_child(source, args.requests))
    summary = {
        name: {
            "gateway": runs[0]["gateway"],
            # per call: the median of the rounds' medians, and their range (the machine's noise)
            "median_us": {call: _spread([run["calls"][call] for run in runs]) for call in CALLED},
        }
        for name, runs in rounds.items()
    }
    print(json.dumps({"requests": args.requests, "rounds": args.rounds, **summary}, indent=2))


if __name__ == "__main__":
    main()
