"""The gateway under test as `gateway serve` runs it: gateway.http.http_server (uvicorn with the
request-head protection of gateway/http/uvicorn_protocol.py, uvicorn's proxy-header reading off),
from the environment's settings. Only the log level differs: uvicorn's start-up line (info) is
what the harness waits for, while the gateway's own level stays the environment's.

    python -m benchmarks.servers.gateway_serve PORT WORKERS
"""

from __future__ import annotations

import dataclasses
import sys

from gateway.http import http_server
from gateway.kernel.settings import load_settings


def main(argv: list[str]) -> None:
    port, workers = int(argv[0]), int(argv[1])
    settings = dataclasses.replace(load_settings(env_file=None), log_level="info")
    http_server.run(settings, "127.0.0.1", port, workers)


if __name__ == "__main__":
    main(sys.argv[1:])
