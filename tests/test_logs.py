"""Structured logs (GATEWAY_LOG_FORMAT=json), the outage log, and the start-up block."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.kernel.logs import JsonFormatter, OutageLog, uvicorn_log_config


def _record(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            info = sys.exc_info()
    return logging.LogRecord("gateway.test", logging.WARNING, __file__, 1, message, args, info)


def test_json_lines_carry_time_level_logger_message_and_exception() -> None:
    line = JsonFormatter().format(_record("lost %d of %s", 3, "x", exc=True))
    entry = json.loads(line)
    assert entry["level"] == "warning" and entry["logger"] == "gateway.test"
    assert entry["message"] == "lost 3 of x"
    assert entry["time"].endswith("Z") and "ValueError: boom" in entry["exception"]
    assert "\n" not in line


def test_every_server_formatter_becomes_json() -> None:
    config = uvicorn_log_config("info", "json")
    assert config["formatters"] and all(
        f == {"()": "gateway.kernel.logs.JsonFormatter"} for f in config["formatters"].values()
    )
    assert uvicorn_log_config("info")["formatters"]["default"] != {
        "()": "gateway.kernel.logs.JsonFormatter"
    }


def test_an_outage_is_logged_once_per_interval_and_its_recovery(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outage = OutageLog(logging.getLogger("gateway.test"), "consumer", interval=3600)
    with caplog.at_level(logging.WARNING, "gateway.test"):
        for _ in range(50):
            outage.failed(ConnectionError("refused"))
        outage.succeeded()
        outage.succeeded()  # nothing more to say
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == "consumer: refused; retrying"
    assert (
        messages[1].startswith("consumer: recovered after")
        and "(50 failed attempts)" in messages[1]
    )
    assert len(messages) == 2


@pytest.mark.slow  # starts processes of its own
def test_serve_starts_with_one_block_saying_what_it_runs_with(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    env |= {"GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/g.db", "GATEWAY_LOG_FORMAT": "json"}
    with socket.socket() as taken:  # the server prints its block, then cannot bind and ends
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = subprocess.run(
            [sys.executable, "-m", "gateway", "serve", "--port", port],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
    block = json.loads(done.stderr.splitlines()[0])
    assert block["message"] == "gateway starting"
    assert block["backend"] == "embedded (in-process limits and de-duplication)"
    assert block["database"].endswith("/g.db") and block["secret_key"] == "data/secret.key"
    assert block["evaluator"] == "process, priority normal"
    assert block["listen"] == f"http://127.0.0.1:{port} (uvicorn, 1 worker(s))"
    assert done.returncode != 0  # the port was taken


def test_runner_calls_and_accepted_deliveries_are_counted_in_the_access_log() -> None:
    from gateway.kernel.logs import CountedCalls, uvicorn_log_config

    config = uvicorn_log_config("info")  # GATEWAY_ACCESS_LOG=on, the default
    assert config["handlers"]["access"]["filters"] == ["counted_calls", "redact_tokens"]
    assert "counted_calls" not in config["handlers"]["default"]["filters"]
    every = uvicorn_log_config("info", access="all")  # a line per request
    assert every["handlers"]["access"]["filters"] == ["redact_tokens"]

    def line(method: str, path: str, status: int) -> logging.LogRecord:
        args = ("127.0.0.1:50000", method, path, "1.1", status)
        return logging.LogRecord(
            "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d', args, None
        )

    quiet = CountedCalls(interval=3600)
    assert not quiet.filter(line("POST", "/api/v1/runner/finish", 200))
    assert not quiet.filter(line("POST", "/api/v1/runner/claim", 200))
    assert not quiet.filter(line("POST", "/webhooks/w/wh_1", 202))
    assert not quiet.filter(line("POST", "/webhooks/w/wh_1/secret-token", 202))
    assert not quiet.filter(line("POST", "/webhooks/p/pcn_1", 202))
    assert quiet.filter(line("POST", "/api/v1/runner/finish", 409))  # refusals are shown
    assert quiet.filter(line("POST", "/webhooks/w/wh_1", 429))
    assert quiet.filter(line("POST", "/webhooks/w/wh_1", 503))
    assert quiet.filter(line("GET", "/api/v1/agent/runs", 200))
    assert quiet.filter(line("POST", "/api/v1/webhooks/wh_1/replay", 202))  # an API call
    counting = CountedCalls(interval=0.0)
    runner = line("POST", "/api/v1/runner/finish", 200)
    assert counting.filter(runner)
    assert runner.getMessage().startswith(
        "1 runner protocol calls (POST /api/v1/runner/...) answered 2xx in the last"
    )
    deliveries = line("POST", "/webhooks/p/pcn_1", 202)
    assert counting.filter(deliveries)
    assert deliveries.getMessage().startswith(
        "1 webhook deliveries (POST /webhooks/w/..., /webhooks/p/...) answered 2xx in the last"
    )


def test_the_access_log_counts_the_ingress_endpoint_s_paths() -> None:
    from gateway.kernel.logs import INGRESS_PREFIXES
    from gateway.webhook_gateway.ingress.endpoint import PREFIXES

    assert tuple(INGRESS_PREFIXES) == tuple(PREFIXES)


def test_a_counted_call_builds_no_log_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """uvicorn's access logger as a connection holds it (gateway/http/uvicorn_protocol.py):
    with the counting filter on its handler (`on`) a counted call makes no record at all."""
    from gateway.kernel.logs import CountedCalls, CountingAccessLogger, counting_access_logger

    access = logging.getLogger(f"test.access.{os.getpid()}")  # as uvicorn_log_config sets it up
    handler = logging.NullHandler()
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    assert counting_access_logger(access) is access  # `all`: no counting filter, a line each
    handler.addFilter(CountedCalls())
    counting = counting_access_logger(access)
    assert isinstance(counting, CountingAccessLogger)
    made: list[tuple[object, ...]] = []
    real = access.makeRecord

    def spy(*args: object, **kwargs: object) -> logging.LogRecord:
        made.append(args[5])  # type: ignore[arg-type]  # the record's arguments
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(access, "makeRecord", spy)
    line = '%s - "%s %s HTTP/%s" %d'
    counting.info(line, "127.0.0.1:1", "POST", "/webhooks/w/wh_1", "1.1", 202)
    counting.info(line, "127.0.0.1:1", "POST", "/webhooks/p/pcn_1", "1.1", 202)
    assert made == []
    counting.info(line, "127.0.0.1:1", "POST", "/webhooks/w/wh_1", "1.1", 401)
    counting.info(line, "127.0.0.1:1", "GET", "/api/v1/agent/runs", "1.1", 200)
    assert [args[4] for args in made] == [401, 200]
