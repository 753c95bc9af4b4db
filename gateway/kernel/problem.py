"""RFC 9457 problem+json rendering, shared by the API and the ingress edge."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from msgspec import Meta, Struct

from gateway.kernel.errors import ServiceError

PROBLEM_CONTENT_TYPE = b"application/problem+json"


class Problem(Struct, kw_only=True):
    """Every error answer (RFC 9457)."""

    type: Annotated[str, Meta(description="about:blank#<code>")]
    title: str
    status: int
    detail: Annotated[str, Meta(description="names the offending field first")]
    code: Annotated[str, Meta(description="stable snake_case error code")]


def problem_body(
    status: int, code: str, title: str, detail: str, members: dict[str, Any] | None = None
) -> bytes:
    """`members`: extension members after the standard ones (RFC 9457 section 3.2)."""
    return orjson.dumps(
        {
            "type": f"about:blank#{code}",
            "title": title,
            "status": status,
            "detail": detail,
            "code": code,
            **(members or {}),
        }
    )


def render(error: ServiceError) -> tuple[int, bytes, dict[str, str]]:
    """Status, body and extra headers for a domain error."""
    return (
        error.status,
        problem_body(error.status, error.code, error.title, error.detail, error.members()),
        error.headers,
    )
