"""What gateway/http/uvicorn_protocol.py adds to each request, in CPU instructions (callgrind).

    python -m benchmarks.protocol_cost [--requests 20000]

Feeds 1 KB keep-alive requests, one read each, through uvicorn's httptools protocol and through
the gateway's BoundedHttpTools, in process on uvloop, and completes each request's response the
way uvicorn's request cycle does (the app itself is not run: what differs is the protocol). Each
protocol runs under `valgrind --tool=callgrind` twice, with the requests and with none; the
difference over the number of requests is its instructions per request. Instruction counts do
not depend on what else the machine runs, unlike timings; single runs still vary by about 1,000
instructions per request (Python's start differs), so compare rows of one session. Needs
valgrind.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
from typing import Any

PROTOCOLS = ("uvicorn", "gateway")
REQUEST = (
    b"POST /webhooks/w/wh_bench HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer t\r\n"
    b"Content-Type: application/json\r\nUser-Agent: bench\r\nContent-Length: 1024\r\n\r\n"
    + b"a"
    * 1024
)


class _Transport(asyncio.Transport):
    """Takes what the protocol writes and drops it."""

    def __init__(self) -> None:
        super().__init__()
        self.closing = False

    def write(self, data: Any) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 80), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _app(scope: Any, receive: Any, send: Any) -> None:
    pass


async def _feed(protocol_name: str, requests: int) -> None:
    from uvicorn.config import Config
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    from uvicorn.server import ServerState

    from gateway.http.uvicorn_protocol import BoundedHttpTools

    cls = BoundedHttpTools if protocol_name == "gateway" else HttpToolsProtocol
    config = Config(app=_app, lifespan="off", access_log=False)
    config.load()
    protocol = cls(config, ServerState(), {}, _loop=asyncio.get_running_loop())
    protocol._start_asgi_task = lambda cycle, app: None  # no app: the protocol alone
    protocol.connection_made(_Transport())
    for n in range(requests):
        protocol.data_received(REQUEST)
        cycle = protocol.cycle
        cycle.response_complete = True  # what sending the whole response does
        cycle.on_response()
        if n % 100 == 99:
            await asyncio.sleep(0)  # let the loop run its timers, as between reads
    protocol.connection_lost(None)


def _instructions(protocol_name: str, requests: int) -> int:
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         "-m", "benchmarks.protocol_cost", "--feed", protocol_name, "--requests", str(requests)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count from callgrind:\n{run.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--feed", choices=PROTOCOLS, help=argparse.SUPPRESS)  # the measured run
    args = parser.parse_args()
    if args.feed:
        import uvloop

        uvloop.run(_feed(args.feed, args.requests))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (apt-get install -y valgrind)")
    for name in PROTOCOLS:
        per_request = (_instructions(name, args.requests) - _instructions(name, 0)) / args.requests
        print(f"{name:8} {per_request:9,.0f} instructions per request")


if __name__ == "__main__":
    main()
