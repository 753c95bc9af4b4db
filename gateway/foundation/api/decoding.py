"""Request bodies and query strings decoded into the Structs their operations declare.

Bodies are read while streaming with a cap: a declared Content-Length or the bytes received past
MAX_API_BODY are a 413 before anything more is buffered. Validation errors become 400 problems
whose `detail` starts with the JSON path of the fault (`triggers[0].filter.webhook_ids: ...`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, get_args, get_origin

import msgspec
import orjson
from starlette.datastructures import QueryParams
from starlette.requests import Request

from gateway.foundation.openapi import (
    MAX_API_BODY as MAX_API_BODY,  # read_capped's default, and the tests'
)
from gateway.kernel.errors import InvalidRequest, PayloadTooLarge

_AT = " - at `"
_OBJECT = re.compile(r"Object (missing required|contains unknown) field `(.*)`", re.S)
_FIELD = re.compile(r"([A-Za-z_][\w.\[\]]*): (.*)", re.S)  # a custom rule's "field: message"


async def read_capped(request: Request, limit: int = MAX_API_BODY) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"body: larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"body: larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def decode_body(raw: bytes, decoder: msgspec.json.Decoder[Any], *, required: bool) -> Any:
    if not required and not raw.strip():
        raw = b"{}"
    require_utf8(raw)
    if b"\\u0000" in raw and _has_nul(raw):
        # PostgreSQL text cannot hold NUL: refuse it here rather than fail in the store
        raise InvalidRequest("body: strings must not contain NUL (\\u0000) characters")
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as exc:
        raise InvalidRequest(validation_detail(str(exc), "body")) from exc
    except msgspec.DecodeError as exc:
        raise InvalidRequest(f"body: not valid JSON ({exc})") from exc


def require_utf8(raw: bytes) -> None:
    """JSON text is UTF-8 (RFC 8259). Checked over the whole body before decoding: msgspec
    validates a string only when a field takes it (and raised UnicodeDecodeError, a 500), and
    skips the bytes of unknown fields unchecked."""
    if raw.isascii():
        return
    try:
        raw.decode()
    except UnicodeDecodeError as exc:
        detail = f"body: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        raise InvalidRequest(detail) from None


QueryFields = tuple[tuple[str, bool], ...]  # (name, repeatable?) of each parameter


def decode_query(params: QueryParams, query_type: Any, names: QueryFields) -> Any:
    values: dict[str, Any] = {}
    for name, repeatable in names:
        if repeatable:
            if found := params.getlist(name):
                values[name] = found
        elif (value := params.get(name)) is not None:
            values[name] = value
    try:
        return msgspec.convert(values, query_type, strict=False)
    except msgspec.ValidationError as exc:
        raise InvalidRequest(validation_detail(str(exc), "query")) from exc


def query_fields(query_type: Any) -> QueryFields:
    """The parameters of a query Struct; its list-typed fields are repeatable. (Inspecting a
    Struct's fields costs far more than decoding it: done once per route.)"""
    return tuple(
        (info.encode_name, get_origin(_unannotated(info.type)) in (list, tuple))
        for info in msgspec.structs.fields(query_type)
    )


def reject_nul(request: Request) -> None:
    """PostgreSQL text cannot hold NUL; a NUL in a path or query value is a client mistake."""
    for name, value in [*request.path_params.items(), *request.query_params.multi_items()]:
        if "\x00" in name or "\x00" in value:
            raise InvalidRequest(f"{name}: must not contain NUL characters")


def validation_detail(message: str, root: str) -> str:
    """msgspec's "Expected `str`, got `int` - at `$.a[0].b`" as "a[0].b: expected str, got int"."""
    text, at, where = message.rpartition(_AT)
    if not at:
        text, where = message, "$`"
    key, in_mapping, mapping = where.partition("` in `")
    if key == "key" and in_mapping:  # a fault in an object's key: "at `key` in `$.metadata`"
        where, text = mapping, f"a key: {text[:1].lower()}{text[1:]}"
    path = where.removesuffix("`").removeprefix("$").removeprefix(".")
    if found := _OBJECT.fullmatch(text):
        path = _join(path, found[2])
        text = "required" if found[1].startswith("missing") else "unknown field"
    elif found := _FIELD.fullmatch(text):
        path = _join(path, found[1])
        text = found[2]
    else:
        text = (text[:1].lower() + text[1:]).replace("`", "")
    return f"{path or root}: {text}"


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _unannotated(annotation: Any) -> Any:
    return get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation


def _has_nul(raw: bytes) -> bool:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False  # the decoder reports the syntax error
    return _holds_nul(value)


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False
