"""Redis CPU per accepted delivery: SUBMIT calls of groups of a given size, sent by the gateway's
own backend to a private redis-server, with Redis's own CPU counters (INFO cpu) read before and
after. No HTTP and no evaluator, so nothing else on the machine is measured.

    python -m benchmarks.submit_cost --deliveries 40000 --group 1,12 --rounds 3

`--spread` sends each delivery of a group to another webhook (as the grid's 10,000 webhooks
do); without it a group's deliveries share one webhook's keys, 60 at most (the rate limit).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import uuid
from typing import Any

import redis

from benchmarks.redis_server import redis_server
from gateway.backends.contract import SHARDS, Submission, Target, Verdict
from gateway.backends.redis_backend import HOT_SCRIPTS, RedisBackend
from gateway.backends.resp_client import RespClient

BODY = b'{"action": "opened", "pad": "' + b"x" * 980 + b'"}'  # 1 KB, as the grid's
HEADERS = b'{"content-type": "application/json"}'


def _redis_cpu_s(info: Any) -> float:
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


async def _measure(url: str, deliveries: int, group: int, spread: bool) -> float:
    """µs of Redis CPU per accepted delivery, `deliveries` of them in groups of `group`."""
    backend = RedisBackend(RespClient(url, scripts=HOT_SCRIPTS), uuid.uuid4().hex[:8], 10, 10**9)
    try:

        def submission(target: Target) -> Submission:
            return Submission(
                target, f"dl_{uuid.uuid4().hex}", uuid.uuid4().hex, BODY, True, HEADERS
            )

        def targets(n: int) -> list[Target]:
            return [Target(f"wh_{uuid.uuid4().hex[:12]}", 1, k % SHARDS) for k in range(n)]

        await backend.submit(submission(targets(1)[0]))  # connected, scripts loaded
        rounds = deliveries // group
        batches = []
        for _ in range(rounds):  # built before the clock starts
            if spread:
                batches.append([submission(t) for t in targets(group)])
            else:
                one = targets(1)[0]  # a webhook of its own per group: under its rate limit
                batches.append([submission(one) for _ in range(group)])
        with redis.Redis.from_url(url) as client:
            before = _redis_cpu_s(client.info("cpu"))
            for batch in batches:
                outcomes = await asyncio.gather(*(backend.submit(s) for s in batch))
                assert all(o.verdict is Verdict.ACCEPTED for o in outcomes), outcomes[0]
            after = _redis_cpu_s(client.info("cpu"))
        return (after - before) / (rounds * group) * 1e6
    finally:
        await backend.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=40_000)
    parser.add_argument("--group", default="1,12", help="group sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spread", action="store_true")
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    with redis_server() as server:
        for size in [int(g) for g in args.group.split(",")]:
            runs = [
                asyncio.run(_measure(server.url, args.deliveries, size, args.spread))
                for _ in range(args.rounds)
            ]
            results[f"group {size}"] = runs
            server.flush()
            print(
                f"group {size:3d}{' spread' if args.spread else ''}: Redis CPU per delivery "
                f"{statistics.median(runs):.1f} µs (runs {', '.join(f'{r:.1f}' for r in runs)})",
                flush=True,
            )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
