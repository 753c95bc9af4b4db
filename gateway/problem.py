"""RFC 9457 problem+json rendering, shared by the API and the ingress edge."""

from __future__ import annotations

import orjson

from gateway.errors import ServiceError

PROBLEM_CONTENT_TYPE = b"application/problem+json"


def problem_body(status: int, code: str, title: str, detail: str) -> bytes:
    return orjson.dumps(
        {
            "type": f"about:blank#{code}",
            "title": title,
            "status": status,
            "detail": detail,
            "code": code,
        }
    )


def render(error: ServiceError) -> tuple[int, bytes, dict[str, str]]:
    """Status, body and extra headers for a domain error."""
    return (
        error.status,
        problem_body(error.status, error.code, error.title, error.detail),
        error.headers,
    )
