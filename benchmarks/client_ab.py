"""A/B of the SUBMIT round trip: the project's RESP client against redis-py, in the same run.

Both sides run the same SUBMIT script on the same private redis-server, with the same keys,
arguments and payloads, from one process on one event loop (uvloop, as `gateway serve` runs),
`--concurrency` requests in flight (as concurrent HTTP requests would be):

- `resp`: `RedisBackend.submit` as ingress calls it (pre-encoded EVALSHA on one pipelined
  connection; a large body's SET written just ahead of the script, one round trip);
- `redis-py`: `redis.asyncio.Redis` (hiredis parser, RESP2), the script registered once with
  `register_script` and called with `keys=`/`args=` (EVALSHA), per-webhook keys and fixed
  arguments prepared once like the RESP side's frames; a large body's SET and the EVALSHA go
  in one non-transactional pipeline (one round trip), as the hot path needs.

Rounds alternate the order. Reported per case: calls/s and the client process's CPU per call
(what the gateway process pays; Redis's own work is the same for both sides).

    .venv/bin/python -m benchmarks.client_ab [--calls 20000] [--rounds 3] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis

from gateway.foundation.backends.contract import (
    DEDUP_WINDOW_S,
    RATE_LIMIT,
    RATE_WINDOW_MS,
    REJECT_LOG_LIMIT,
    Submission,
    Target,
    shard_of,
)
from gateway.foundation.backends.lua_scripts import SUBMIT_SCRIPT
from gateway.foundation.backends.redis_keys import KeySpace
from gateway.foundation.backends.resp_client import RespClient
from gateway.webhook_gateway.transports.redis_stream.ingress import (
    HOT_SCRIPTS,
    SIDE_BODY_MIN,
    SIDE_BODY_ORPHAN_TTL_S,
    RedisBackend,
)
from testbed.redis_server import redis_server

WEBHOOKS = 1000
AUTH_LIMIT = 10
MAX_BACKLOG = 10_000_000

Submit = Callable[[Submission], Awaitable[Any]]


def targets() -> list[Target]:
    uids = [f"wh_{secrets.token_hex(8)}" for _ in range(WEBHOOKS)]
    return [Target(uid, 1, shard_of(uid)) for uid in uids]


def body_of(size: int) -> bytes:
    return b'{"type":"bench","pad":"' + b"x" * max(0, size - 25) + b'"}'


class RedisPySubmit:
    """SUBMIT through redis-py: the same keys and arguments as `SubmitFrame` encodes."""

    def __init__(self, redis: Redis, keyspace: KeySpace) -> None:
        self.redis = redis
        self.keyspace = keyspace
        self.script = redis.register_script(SUBMIT_SCRIPT)
        self._fixed: dict[str, tuple[Any, list[str], list[Any]]] = {}

    def _frame(self, target: Target) -> tuple[Any, list[str], list[Any]]:
        frame = self._fixed.get(target.webhook_uid)
        if frame is None:
            k = self.keyspace.webhook(target.webhook_uid, target.shard)
            keys = [k.version, k.rate, k.rejects, k.stream, k.dropped, k.backlog, k.pending]
            args = [
                *(RATE_LIMIT, RATE_WINDOW_MS, REJECT_LOG_LIMIT, DEDUP_WINDOW_S),
                *(target.webhook_uid, target.version, MAX_BACKLOG),
            ]
            frame = self._fixed[target.webhook_uid] = (k, keys, args)
        return frame

    async def __call__(self, s: Submission) -> Any:
        k, keys, args = self._frame(s.target)
        keys = [*keys, k.seen(s.identity)]
        tail = [s.delivery_id, "1" if s.valid_json else "0", len(s.body)]
        if len(s.body) < SIDE_BODY_MIN:
            return await self.script(keys=keys, args=[*args, *tail, s.body, s.identity, s.headers])
        body_key = k.body_prefix + s.delivery_id
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(body_key, s.body, ex=SIDE_BODY_ORPHAN_TTL_S)
            await self.script(
                keys=[*keys, body_key],
                args=[*args, *tail, b"", s.identity, s.headers],
                client=pipe,
            )
            replies = await pipe.execute()
        return replies[-1]


async def drive(submit: Submit, all_targets: list[Target], body: bytes, calls: int, conc: int):  # type: ignore[no-untyped-def]
    """`calls` submissions, `conc` in flight; (calls/s, client CPU µs per call)."""
    per_task = calls // conc
    run = secrets.token_hex(4)

    async def worker(n: int) -> None:
        for i in range(per_task):
            target = all_targets[(n * per_task + i) % len(all_targets)]
            ident = f"{run}-{n}-{i}"
            s = Submission(target, f"dl_{ident}", ident, body, True)
            reply = await submit(s)
            assert reply is not None

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(n) for n in range(conc)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    done = per_task * conc
    return done / wall, cpu / done * 1e6


async def main_async(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    results: dict[str, dict[str, list[float]]] = {}
    with redis_server() as server:
        keyspace = KeySpace("ab")
        client = RespClient(server.url, scripts=HOT_SCRIPTS)
        backend = RedisBackend(client, "ab", AUTH_LIMIT, MAX_BACKLOG)
        redis = Redis.from_url(server.url, protocol=2, max_connections=args.concurrency)
        py = RedisPySubmit(redis, keyspace)
        sides: dict[str, Submit] = {"resp": backend.submit, "redis-py": py}
        for size in args.sizes:
            body = body_of(size)
            # large bodies: fewer calls, so that Redis holds at most ~130 MB of them
            calls = min(args.calls, max(args.concurrency, 2_000 * 65536 // size))
            calls -= calls % args.concurrency
            for rnd in range(args.rounds):
                order = list(sides) if rnd % 2 == 0 else list(reversed(sides))
                for side in order:
                    with server.client() as sync:
                        sync.flushall()
                    all_targets = targets()
                    backend.prepare(all_targets)
                    await drive(sides[side], all_targets, body, 640, args.concurrency)  # warm-up
                    with server.client() as sync:
                        sync.flushall()
                    rate, cpu = await drive(sides[side], all_targets, body, calls, args.concurrency)
                    case = f"{side} {size} B"
                    results.setdefault(case, {"rate": [], "cpu": []})
                    results[case]["rate"].append(rate)
                    results[case]["cpu"].append(cpu)
                    print(
                        f"round {rnd + 1} {case:>18}: {rate:9,.0f} calls/s {cpu:7.1f} µs CPU/call"
                    )
        await client.close()
        await redis.aclose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 65536])
    args = parser.parse_args()
    args.calls -= args.calls % args.concurrency
    try:
        import uvloop

        results = uvloop.run(main_async(args))
    except ImportError:
        results = asyncio.run(main_async(args))
    print("\n| case | calls/s median (min-max) | client CPU µs/call median |")
    print("|---|---|---|")
    for case, figures in results.items():
        rate, cpu = figures["rate"], figures["cpu"]
        print(
            f"| {case} | {statistics.median(rate):,.0f} ({min(rate):,.0f}-{max(rate):,.0f}) "
            f"| {statistics.median(cpu):.1f} |"
        )


if __name__ == "__main__":
    main()
