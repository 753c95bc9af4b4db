"""The HTTP server `gateway serve` runs: uvicorn, with the request-head protection of
gateway/http/uvicorn_protocol.py (gateway/http/request_head.py has the limits): at most
READ_BUFFER bytes of a head (the head alone, never its body) are read before a 431, a head must
be complete within GATEWAY_HEADER_TIMEOUT, trailers are bounded like a head (and never passed on
as headers), and the rest of a body answered early gets GATEWAY_BODY_TIMEOUT. HTTP/1.1 only:
webhook senders use it, and HTTP/2 would bring header and stream limits of its own to keep in
step. (Granian was served beside it until it measured ~1.4x the CPU per request:
docs/ingress.md, "Why uvicorn".)
"""

from __future__ import annotations

from gateway.kernel.settings import Settings

APP = "gateway.composition.app:app_from_environment"


def run(settings: Settings, host: str, port: int, workers: int) -> None:
    """Serve until SIGINT/SIGTERM has stopped the server gracefully; then return."""
    import uvicorn

    from gateway.http.uvicorn_protocol import BoundedHttpTools
    from gateway.kernel.logs import uvicorn_log_config

    uvicorn.run(  # the app factory sets the protocol's deadlines (configure_protocol)
        APP,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        http=BoundedHttpTools,
        log_level=settings.log_level,
        access_log=settings.access_log != "off",
        log_config=uvicorn_log_config(settings.log_level, settings.log_format, settings.access_log),
        # forwarded headers are the app's to read, from GATEWAY_TRUSTED_PROXIES only
        # (gateway/http/trusted_proxies.py); uvicorn's own reading would trust 127.0.0.1 by default
        # and rewrite the peer the app sees
        proxy_headers=False,
        server_header=False,
    )


def configure_protocol(settings: Settings) -> None:
    """The request-head and body deadlines of the protocol, in the process that serves: called
    by the app factory (APP), which uvicorn runs in each worker. With `--workers` > 1 uvicorn
    spawns its workers, so a class attribute set in the parent would not reach them."""
    from gateway.http.uvicorn_protocol import BoundedHttpTools

    BoundedHttpTools.header_timeout = settings.header_timeout
    BoundedHttpTools.body_timeout = settings.body_timeout
