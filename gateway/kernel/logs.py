"""Logging set-up; the access log never shows a url_token secret."""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Literal

import msgspec

_URL_TOKEN = re.compile(r"(/webhooks/w/[^/\s\"?]+/)[^\s\"?]+")


def redact(text: str) -> str:
    """Replace the token path segment of an ingress URL with {token}."""
    return _URL_TOKEN.sub(r"\1{token}", text)


class RedactTokens(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        record.msg = redact(str(record.msg))
        return True


class LogEntry(msgspec.Struct, kw_only=True):
    """One line of the JSON log; `exception` only when there is one."""

    time: str
    level: str
    logger: str
    message: str
    exception: str | msgspec.UnsetType = msgspec.UNSET


class JsonFormatter(logging.Formatter):
    """One JSON object per line (GATEWAY_LOG_FORMAT=json): time, level, logger, message, and
    the exception when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry = LogEntry(
            time=self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            level=record.levelname.lower(),
            logger=record.name,
            message=record.getMessage(),
        )
        if record.exc_info:
            entry.exception = self.formatException(record.exc_info)
        return _encode(entry).decode()

    converter = time.gmtime  # type: ignore[assignment]  # timestamps in UTC


class _Counted:
    """2xx answers to POSTs under `prefixes` counted since `since`, and what the summary line
    calls them."""

    __slots__ = ("count", "name", "prefixes", "since")

    def __init__(self, name: str, prefixes: tuple[str, ...]) -> None:
        self.name, self.prefixes = name, prefixes
        self.count, self.since = 0, time.monotonic()


# the ingress endpoint's paths (webhook_gateway.ingress.endpoint.PREFIXES; a test holds them
# together: the kernel imports nothing above it)
INGRESS_PREFIXES = ("/webhooks/w/", "/webhooks/p/")


class CountedCalls(logging.Filter):
    """The access log (GATEWAY_ACCESS_LOG=on) without a line per call that something else
    accounts for, answered 2xx: runner protocol calls (an idle runner long-polls
    `POST /api/v1/runner/finish` all day, a busy one calls once per run: those lines were most
    of a server's log) and accepted webhook deliveries (the delivery log holds each one, and
    `/metrics` counts them; a line each cost the serving process ~20 % of its CPU at 4,000
    deliveries a second, measured under the open-loop benchmark). They are counted instead,
    and each kind's count is logged, as one line, with its first call after `interval`
    seconds. Refusals (4xx, 5xx) are logged one by one as any request."""

    def __init__(self, interval: float = 300.0) -> None:
        super().__init__()
        self.interval = interval
        self._kinds = (
            _Counted("runner protocol calls (POST /api/v1/runner/...)", ("/api/v1/runner/",)),
            _Counted(
                "webhook deliveries (POST /webhooks/w/..., /webhooks/p/...)", INGRESS_PREFIXES
            ),
        )

    def take(self, args: Any) -> Literal[True] | tuple[str, tuple[Any, ...]] | None:
        """For the arguments of an access line (client, method, path, HTTP version, status):
        None, not a call this counts (log the line); True, counted (no line); or the summary
        line (message, arguments) to log instead of it, when its kind's interval has passed."""
        if not (isinstance(args, tuple) and len(args) == 5):  # not uvicorn's access line
            return None
        _client, method, path, _version, status = args
        if method != "POST" or not isinstance(status, int) or not 200 <= status < 300:
            return None
        if not isinstance(path, str):
            return None
        kind = next((k for k in self._kinds if path.startswith(k.prefixes)), None)
        if kind is None:
            return None
        kind.count += 1
        now = time.monotonic()
        if now - kind.since < self.interval:
            return True
        summary = (kind.count, kind.name, now - kind.since)
        kind.count, kind.since = 0, now
        return "%d %s answered 2xx in the last %.0f s", summary

    def filter(self, record: logging.LogRecord) -> bool:
        taken = self.take(record.args)
        if taken is None:
            return True
        if not isinstance(taken, tuple):  # counted
            return False
        record.msg, record.args = taken
        return True


class CountingAccessLogger:
    """uvicorn's access logger as a connection holds it, asking the `CountedCalls` of its
    handlers first: a call that is only counted builds no log record (a record made to be
    dropped by the filter cost ~6.6 µs a request, against ~32 µs for a line written)."""

    __slots__ = ("_counted", "_logger")

    def __init__(self, logger: logging.Logger, counted: CountedCalls) -> None:
        self._logger, self._counted = logger, counted

    def info(self, msg: str, *args: Any) -> None:
        taken = self._counted.take(args)
        if taken is None:
            self._logger.info(msg, *args)
        elif isinstance(taken, tuple):  # the summary line, instead of this call's
            self._logger.info(taken[0], *taken[1])


def counting_access_logger(logger: logging.Logger) -> logging.Logger | CountingAccessLogger:
    """`logger` (uvicorn's access logger), asking its handlers' `CountedCalls` before it makes a
    record, when one of them has one (GATEWAY_ACCESS_LOG=on)."""
    for handler in logger.handlers:
        for found in handler.filters:
            if isinstance(found, CountedCalls):
                return CountingAccessLogger(logger, found)
    return logger


_encode = msgspec.json.Encoder().encode
JSON_FORMATTER = {"()": "gateway.kernel.logs.JsonFormatter"}
# a configuration of logging.config.dictConfig, in the form uvicorn takes it
LogConfig = dict[str, Any]


def _as_json(config: LogConfig, fmt: str) -> LogConfig:
    """`config` with every formatter replaced by the JSON one, for fmt "json"."""
    if fmt == "json":
        config["formatters"] = dict.fromkeys(config.get("formatters", {}), JSON_FORMATTER)
    return config


def configure(level: str, fmt: str, text_format: str = "%(levelname)s %(message)s") -> None:
    """Logging of a process that runs no HTTP server (the worker, the runner)."""
    handler = logging.StreamHandler()
    handler.addFilter(RedactTokens())
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(text_format))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


def uvicorn_log_config(level: str, fmt: str = "text", access: str = "on") -> LogConfig:
    """uvicorn's logging, tokens redacted; `access` as GATEWAY_ACCESS_LOG (`on`: the calls
    `CountedCalls` counts are not logged one by one; `all`: every request; `off`: uvicorn is
    told not to log requests at all)."""
    from uvicorn.config import LOGGING_CONFIG

    config: LogConfig = {**LOGGING_CONFIG}
    config["filters"] = {
        "redact_tokens": {"()": "gateway.kernel.logs.RedactTokens"},
        "counted_calls": {"()": "gateway.kernel.logs.CountedCalls"},
    }
    # counted first: a line it drops is not redacted for nothing
    counted = ["counted_calls"] if access == "on" else []
    config["handlers"] = {
        name: {**handler, "filters": [*(counted if name == "access" else []), "redact_tokens"]}
        for name, handler in LOGGING_CONFIG["handlers"].items()
    }
    config["loggers"] = {
        **LOGGING_CONFIG["loggers"],
        "gateway": {"handlers": ["default"], "level": level.upper(), "propagate": False},
    }
    return _as_json(config, fmt)


class OutageLog:
    """Logs a failing dependency once per `interval` instead of once per attempt: the first
    failure, then a reminder with the count, and the recovery with how long it lasted.
    Tracebacks only at debug level."""

    def __init__(self, logger: logging.Logger, what: str, interval: float = 30.0) -> None:
        self.log = logger
        self.what = what
        self.interval = interval
        self._since: float | None = None
        self._last = 0.0
        self._failures = 0

    def failed(self, exc: BaseException) -> None:
        import time

        now = time.monotonic()
        self._failures += 1
        self.log.debug("%s: %s", self.what, exc, exc_info=exc)
        if self._since is None:
            self._since, self._last = now, now
            self.log.warning("%s: %s; retrying", self.what, exc)
        elif now - self._last >= self.interval:
            self._last = now
            self.log.warning(
                "%s: still failing after %.0f s (%d attempts): %s",
                self.what,
                now - self._since,
                self._failures,
                exc,
            )

    def succeeded(self) -> None:
        if self._since is None:
            return
        import time

        lasted = time.monotonic() - self._since
        self.log.warning(
            "%s: recovered after %.0f s (%d failed attempts)", self.what, lasted, self._failures
        )
        self._since, self._failures = None, 0
