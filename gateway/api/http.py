"""Request parsing and response rendering shared by the API handlers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.errors import InvalidRequest

MAX_API_BODY = 1_048_576


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_UTC_Z)


def json_response(content: Any, status_code: int = 200) -> JSONResponse:
    return JSONResponse(content, status_code=status_code)


async def json_object(request: Request, *, allow_empty: bool = False) -> dict[str, Any]:
    """The request body as a JSON object, or a 400 that says what is wrong with it."""
    body = await request.body()
    if not body.strip() and allow_empty:
        return {}
    if len(body) > MAX_API_BODY:
        raise InvalidRequest(f"body: larger than {MAX_API_BODY} bytes")
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"body: not valid JSON ({exc.msg})") from exc
    if not isinstance(value, dict):
        raise InvalidRequest("body: expected a JSON object")
    if b"\\u0000" in body and _has_nul(value):
        # PostgreSQL text cannot hold NUL: refuse it here rather than fail in the store
        raise InvalidRequest("body: strings must not contain NUL (\\u0000) characters")
    return value


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


def reject_unknown(body: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidRequest(f"{unknown[0]}: unknown field")


def body_str(
    body: dict[str, Any],
    name: str,
    *,
    required: bool = False,
    max_len: int = 10_000,
    allow_empty: bool = False,
) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            raise InvalidRequest(f"{name}: required")
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"{name}: expected a string")
    if not allow_empty and not value.strip():
        raise InvalidRequest(f"{name}: must not be blank")
    if len(value) > max_len:
        raise InvalidRequest(f"{name}: longer than {max_len} characters")
    return value


def body_bool(body: dict[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise InvalidRequest(f"{name}: expected true or false")
    return value


def query_limit(request: Request, *, default: int = 50, maximum: int = 100) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= maximum:
        raise InvalidRequest(f"limit: expected an integer from 1 to {maximum}")
    return int(raw)


def query_bool(request: Request, name: str, *, default: bool = False) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if raw.lower() in ("true", "1"):
        return True
    if raw.lower() in ("false", "0"):
        return False
    raise InvalidRequest(f"{name}: expected true or false")


def query_datetime(request: Request, name: str) -> datetime | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    return parse_datetime(raw, name)


def parse_datetime(raw: str, name: str) -> datetime:
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise InvalidRequest(f"{name}: expected an RFC 3339 date-time") from exc
    if value.tzinfo is None:
        raise InvalidRequest(f"{name}: expected an RFC 3339 date-time with a time zone offset")
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:  # e.g. 0001-01-01T00:00:00+05:00
        raise InvalidRequest(f"{name}: date-time out of range") from exc


def query_choice(request: Request, name: str, choices: tuple[str, ...], default: str) -> str:
    raw = request.query_params.get(name, default)
    if raw not in choices:
        raise InvalidRequest(f"{name}: expected one of {', '.join(choices)}")
    return raw


def query_required(request: Request, name: str) -> str:
    raw = request.query_params.get(name)
    if not raw:
        raise InvalidRequest(f"{name}: required query parameter")
    return raw
