"""Logging set-up; the access log never shows a url_token secret."""

from __future__ import annotations

import logging
import re
from typing import Any

_URL_TOKEN = re.compile(r"(/webhooks/w/[^/\s\"?]+/)[^\s\"?]+")


def redact(text: str) -> str:
    """Replace the token path segment of an ingress URL with {token}."""
    return _URL_TOKEN.sub(r"\1{token}", text)


class RedactTokens(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        record.msg = redact(str(record.msg))
        return True


def uvicorn_log_config(level: str) -> dict[str, Any]:
    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, Any] = {**LOGGING_CONFIG}
    config["filters"] = {"redact_tokens": {"()": "gateway.logs.RedactTokens"}}
    config["handlers"] = {
        name: {**handler, "filters": ["redact_tokens"]}
        for name, handler in LOGGING_CONFIG["handlers"].items()
    }
    config["loggers"] = {
        **LOGGING_CONFIG["loggers"],
        "gateway": {"handlers": ["default"], "level": level.upper(), "propagate": False},
    }
    return config
