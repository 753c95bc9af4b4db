"""Open-loop load at a fixed rate: send times are scheduled up front, latency is measured from
the intended send time (so a stalled server cannot hide its queueing: no coordinated omission).

    python -m benchmarks.openloop --port P --file REQUESTS --rate 1000 --duration 10 --warmup 1

Keep-alive connections (HTTP/1.1, one request at a time each); a request waits for a free
connection when all are busy, and that wait counts in its latency. Requests due in the first
`warmup` seconds are sent but left out of the percentiles. Prints one JSON object with the
offered and the achieved rate, status counts and latency percentiles (ms). openloop.c does the
same at a fraction of the CPU; the benchmark uses it when a C compiler is present.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.requests_file import read_requests

Job = tuple[float, bytes] | None


async def _connection(
    port: int,
    queue: asyncio.Queue[Job],
    latencies: list[float],
    statuses: Counter[int],
    measured_from: float,
) -> None:
    loop = asyncio.get_running_loop()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while (job := await queue.get()) is not None:
            intended, request = job
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if length:
                await reader.readexactly(length)
            if intended >= measured_from:
                latencies.append(loop.time() - intended)
            statuses[status] += 1
    finally:
        writer.close()


async def open_loop(
    port: int,
    requests: list[bytes],
    rate: float,
    duration: float,
    connections: int,
    warmup: float = 0.0,
) -> dict[str, Any]:
    count = int(rate * (duration + warmup))
    if count > len(requests):
        raise ValueError(f"{count} requests wanted, the file holds {len(requests)}")
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Job] = asyncio.Queue()
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    await asyncio.sleep(0)
    start = loop.time() + 0.2  # connections open before the clock starts
    workers = [
        asyncio.create_task(_connection(port, queue, latencies, statuses, start + warmup))
        for _ in range(connections)
    ]
    await asyncio.sleep(start - loop.time())
    sent = 0
    while sent < count:
        now = loop.time()
        due = min(count, int((now - start) * rate) + 1)
        while sent < due:
            queue.put_nowait((start + sent / rate, requests[sent]))
            sent += 1
        next_at = start + sent / rate
        await asyncio.sleep(max(0.0, next_at - loop.time()))
    for _ in workers:
        queue.put_nowait(None)
    await asyncio.wait_for(asyncio.gather(*workers), timeout=duration + 60)
    elapsed = loop.time() - start
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000 if ordered else 0

    done = sum(statuses.values())
    return {
        "generator": "openloop.py",
        "offered_rps": rate,
        "achieved_rps": done / elapsed if elapsed else 0.0,
        "requests": done,
        "measured": len(latencies),
        "warmup_s": warmup,
        "duration_s": elapsed,
        "connections": connections,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "latency_ms": {"p50": pct(50), "p99": pct(99), "p999": pct(99.9), "max": pct(100)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--file", type=Path, required=True)
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--warmup", type=float, default=1.0)
    args = parser.parse_args()
    requests = read_requests(args.file)
    run = open_loop(args.port, requests, args.rate, args.duration, args.connections, args.warmup)
    try:
        import uvloop

        result = uvloop.run(run)
    except ImportError:
        result = asyncio.run(run)
    result["client_cpu_s"] = time.process_time()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
