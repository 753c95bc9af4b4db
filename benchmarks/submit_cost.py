"""Redis CPU per accepted delivery: SUBMIT calls of groups of a given size, sent by the gateway's
own backend to a private redis-server, with Redis's own CPU counters (INFO cpu) read before and
after. No HTTP and no evaluator, so nothing else on the machine is measured.

    python -m benchmarks.submit_cost --deliveries 40000 --group 1,12 --rounds 3

`--spread` sends each delivery of a group to another webhook (as the grid's 10,000 webhooks
do); without it a group's deliveries share one webhook's keys, 60 at most (the rate limit).

`--parts` measures, for the first group size, where that CPU goes: SUBMIT reduced to the call
alone (each delivery answered at once), to the call and the stream append, the whole script
with its Redis commands stubbed (Lua's own work), the whole script without the rate window, and
the whole script. Every variant answers every delivery as accepted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import uuid
from typing import Any

import redis

from gateway.foundation.backends import lua_scripts
from gateway.foundation.backends.contract import SHARDS, Submission, Target, Verdict
from gateway.foundation.backends.resp_client import RespClient
from gateway.webhook_gateway.transports.redis_stream.ingress import HOT_SCRIPTS, RedisBackend
from gateway.webhook_gateway.transports.redis_stream.submit_groups import SubmitGroups
from testbed.redis_server import redis_server

BODY = b'{"action": "opened", "pad": "' + b"x" * 980 + b'"}'  # 1 KB, as the grid's
HEADERS = b'{"content-type": "application/json"}'


def _redis_cpu_s(info: Any) -> float:
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


_FULL = lua_scripts.SUBMIT_SCRIPT
_EACH_DELIVERY = "for i = 0, #KEYS / 8 - 1 do\n  local a = 13 * i\n"
# Lua's own work: every redis.call answered by a stub (a local shadowing the global `redis`)
_STUB = (
    "local redis = {call = function(command)\n"
    "  if command == 'TIME' then return {'1', '0'} end\n"
    "  if command == 'XADD' then return '1-0' end\n"
    "  if command == 'LPUSH' or command == 'HSET' then return 1 end\n"
    "  return false\n"
    "end}\n"
)


def _edited(*edits: tuple[str, str]) -> str:
    """SUBMIT with each (old, new) text replaced; old must be there (the script changed?)."""
    script = _FULL
    for old, new in edits:
        if old not in script:
            raise SystemExit(f"submit_cost --parts: not in SUBMIT any more: {old!r}")
        script = script.replace(old, new)
    return script


PARTS = {
    "the call alone": "#!lua\nlocal r = {}\n"
    + _EACH_DELIVERY
    + "  r[i + 1] = {'OK', ARGV[a + 8]}\nend\nreturn r\n",
    "the call and the stream append": "#!lua\nlocal r = {}\n"
    + _EACH_DELIVERY
    + "  redis.call('XADD', KEYS[8 * i + 4], '*', 'd', ARGV[a + 8], 'w', ARGV[a + 5], 't', 1,\n"
    "             'n', ARGV[a + 10], 'l', 'Accepted', 'i', ARGV[a + 12], 'p', ARGV[a + 11],\n"
    "             'h', ARGV[a + 13])\n"
    "  r[i + 1] = {'OK', ARGV[a + 8]}\nend\nreturn r\n",
    "the script, its commands stubbed": _edited(("#!lua\n", "#!lua\n" + _STUB)),
    "the script without the rate window": _edited(
        ("local free_at = full_until(rate_key, rate, floor, window)", "local free_at = nil"),
        ("window_push(rate_key, window, rate)\n  return {'OK', id}", "return {'OK', id}"),
    ),
    "the script": _FULL,
}


async def _measure(
    url: str, deliveries: int, group: int, spread: bool, script: str = _FULL
) -> float:
    """µs of Redis CPU per accepted delivery, `deliveries` of them in groups of `group`, sent
    as the SUBMIT `script` (the real one, or one of PARTS)."""
    client = RespClient(url, scripts=(*HOT_SCRIPTS, script))
    backend = RedisBackend(client, uuid.uuid4().hex[:8], 10, 10**9)
    if script != _FULL:  # the backend's grouping, calling the variant instead
        backend._groups = SubmitGroups(client, lua_scripts.sha1(script), by_slot=False)
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
    parser.add_argument("--parts", action="store_true", help="where the first size's CPU goes")
    args = parser.parse_args()
    if args.parts:
        _parts(args)
        return
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


def _parts(args: argparse.Namespace) -> None:
    size = int(args.group.split(",")[0])
    results: dict[str, list[float]] = {}
    with redis_server() as server:
        for name, script in PARTS.items():
            runs = []
            for _ in range(args.rounds):
                runs.append(
                    asyncio.run(_measure(server.url, args.deliveries, size, args.spread, script))
                )
                server.flush()
            results[name] = runs
            print(
                f"group {size}{' spread' if args.spread else ''}, {name}: Redis CPU per delivery "
                f"{statistics.median(runs):.1f} µs (runs {', '.join(f'{r:.1f}' for r in runs)})",
                flush=True,
            )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
