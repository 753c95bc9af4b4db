"""The HTTP server `gateway serve` runs: uvicorn or granian (GATEWAY_SERVER, `--server`).

Both get the same request-head protection (gateway/ingress/request_head.py): at most
READ_BUFFER bytes of a head (the head alone, never its body) are read before a 431, and a head
must be complete within GATEWAY_HEADER_TIMEOUT. Granian enforces both natively (hyper's buffer
limit and header-read timeout); uvicorn through gateway/uvicorn_protocol.py, which also bounds
trailers like a head (never passing them on as headers) and gives the rest of a body answered
early GATEWAY_BODY_TIMEOUT (granian closes such a connection after the answer). Both serve
HTTP/1.1 only: webhook senders use it, and HTTP/2 would bring header and stream limits of its
own to keep in step.
"""

from __future__ import annotations

import os
import signal

from gateway.ingress.request_head import READ_BUFFER
from gateway.settings import HttpServer, Settings
from gateway.types import ASGIApp

APP = "gateway.app:app_from_environment"
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def run(settings: Settings, server: HttpServer, host: str, port: int, workers: int) -> None:
    """Serve until SIGINT/SIGTERM has stopped the server gracefully; then return."""
    if server == "granian":
        _granian(settings, host, port, workers)
    else:
        _uvicorn(settings, host, port, workers)


def _uvicorn(settings: Settings, host: str, port: int, workers: int) -> None:
    import uvicorn

    from gateway.logs import uvicorn_log_config
    from gateway.uvicorn_protocol import BoundedHttpTools

    BoundedHttpTools.header_timeout = settings.header_timeout
    BoundedHttpTools.body_timeout = settings.body_timeout
    uvicorn.run(
        APP,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        http=BoundedHttpTools,
        log_level=settings.log_level,
        log_config=uvicorn_log_config(settings.log_level, settings.log_format),
        proxy_headers=False,
        server_header=False,
    )


def _granian(settings: Settings, host: str, port: int, workers: int) -> None:
    from granian.constants import HTTPModes, Interfaces
    from granian.http import HTTP1Settings
    from granian.log import LogLevels
    from granian.server import Server

    from gateway.logs import ACCESS_FORMAT, granian_log_config

    Server(
        APP,
        factory=True,
        address=host,
        port=port,
        workers=workers,
        interface=Interfaces.ASGI,
        http=HTTPModes.http1,
        websockets=False,
        http1_settings=HTTP1Settings(
            header_read_timeout=max(1, round(settings.header_timeout * 1000)),
            max_buffer_size=READ_BUFFER,
        ),
        log_level=LogLevels(settings.log_level),
        log_dictconfig=granian_log_config(settings.log_level, settings.log_format),
        log_access=True,
        log_access_format=ACCESS_FORMAT,
    ).serve(target_loader=_granian_worker_app)


def _granian_worker_app(_target: str) -> ASGIApp:
    """The app, loaded in a granian worker process that first arranges to stop when its parent
    (`gateway serve`) dies: granian workers otherwise outlive a SIGKILLed main process and go on
    serving, unsupervised, on the shared socket."""
    _stop_with_parent()
    from gateway.app import app_from_environment

    return app_from_environment()


def _stop_with_parent() -> None:
    import ctypes

    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
        return  # not Linux, or refused: as before, the worker may outlive a killed server
    if os.getppid() != parent:  # the parent died before the signal was armed
        os.kill(os.getpid(), signal.SIGTERM)
