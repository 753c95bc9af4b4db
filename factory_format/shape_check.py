"""A document checked against its JSON Schema, each failure rendered as a diagnostic at the
key or value it concerns. Schema nodes may carry `x-warp-codes` and `x-warp-messages` (by
keyword) and `x-warp-value-hints` (by rejected value) to say more than a generic message."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

from .codes import Code
from .diagnostics import Diagnostics, show
from .documents import Document
from .positions import DocPath, render_path

__all__ = ["check_shape"]

_DEFAULT_CODES = {
    "additionalProperties": Code.UNKNOWN_FIELD,
    "required": Code.MISSING_FIELD,
    "type": Code.INVALID_TYPE,
    "uniqueItems": Code.DUPLICATE_VALUE,
    "not": Code.CONFLICTING_FIELDS,
}


@dataclass(frozen=True)
class _Problem:
    path: DocPath
    code: Code
    message: str
    at_key: bool = False
    shown_at: DocPath | None = None  # where to point, when not at `path` itself


def check_shape(doc: Document, validator: Draft202012Validator, sink: Diagnostics) -> None:
    for error in validator.iter_errors(doc.value):
        for problem in _problems(error):
            doc.faults.append(problem.path)
            shown = problem.shown_at or problem.path
            doc.report(sink, shown, problem.code, problem.message, at_key=problem.at_key)


def _fill(template: str, field: str, key: str) -> str:
    """x-warp-messages hold `{field}` and `{key}`, and other braces that are text."""
    return template.replace("{field}", field).replace("{key}", key)


@dataclass(frozen=True)
class _Failure:
    """The parts of a jsonschema ValidationError the messages use, typed."""

    keyword: str
    instance: Any
    limit: Any  # the keyword's value in the schema
    schema: dict[str, Any]

    @classmethod
    def of(cls, error: ValidationError) -> _Failure:
        schema = error.schema if isinstance(error.schema, dict) else {}
        return cls(str(error.validator), error.instance, error.validator_value, schema)


def _problems(error: ValidationError) -> Iterator[_Problem]:
    path: DocPath = tuple(error.absolute_path)
    failure = _Failure.of(error)
    keyword, schema = failure.keyword, failure.schema
    code = Code(
        schema.get("x-warp-codes", {}).get(keyword, _DEFAULT_CODES.get(keyword, Code.INVALID_VALUE))
    )
    custom = schema.get("x-warp-messages", {}).get(keyword)
    field = render_path(path) or "the document"
    if keyword == "additionalProperties":
        yield from _unknown_keys(failure, path, code, custom)
    elif keyword == "required":
        yield from _missing_keys(failure, path, code, custom)
    elif keyword == "uniqueItems":
        yield from _duplicates(failure, path, code, field)
    elif keyword == "not":
        yield _Problem(
            _conflict_path(failure, path),
            code,
            custom or f"`{field}` holds keys that exclude each other",
            at_key=True,
        )
    else:
        message = _fill(custom, field, "") if custom else _generic(failure, field)
        yield _Problem(path, code, message)


def _unknown_keys(
    error: _Failure, path: DocPath, code: Code, custom: str | None
) -> Iterator[_Problem]:
    known = sorted(error.schema.get("properties", {}))
    for key in error.instance:
        if key in known:
            continue
        if custom:
            message = _fill(custom, render_path(path), key)
        else:
            where = f" in `{render_path(path)}`" if path else ""
            close = difflib.get_close_matches(key, known, n=1)
            guess = f"did you mean `{close[0]}`? " if close else ""
            allowed = ", ".join(known) if known else "none"
            message = f"unknown field `{key}`{where}; {guess}allowed here: {allowed}"
        yield _Problem((*path, key), code, message, at_key=True)


def _missing_keys(
    error: _Failure, path: DocPath, code: Code, custom: str | None
) -> Iterator[_Problem]:
    for key in error.limit:
        if key in error.instance:
            continue
        if custom:
            message = _fill(custom, render_path(path), key)
        else:
            where = f"`{render_path(path)}` needs" if path else "this file needs"
            message = f"{where} `{key}`: add `{key}: ...`"
        # the fault is the missing key's; the diagnostic points at the key holding the mapping
        # that lacks it, or at the key the schema names (`authMode` for a signatureScheme)
        pointer = error.schema.get("x-warp-at")
        shown = (*path, pointer) if isinstance(pointer, str) and pointer in error.instance else path
        yield _Problem((*path, key), code, message, at_key=True, shown_at=shown)


def _duplicates(error: _Failure, path: DocPath, code: Code, field: str) -> Iterator[_Problem]:
    seen: list[Any] = []
    for index, item in enumerate(error.instance):
        if item in seen:
            yield _Problem(
                (*path, index), code, f"`{field}` lists {show(item)} twice; remove the repeat"
            )
        else:
            seen.append(item)


def _conflict_path(error: _Failure, path: DocPath) -> DocPath:
    """Point a `not: {required: [a, b]}` (or `not: {anyOf: [{required: [a]}, ...]}`) failure
    at the last of the keys present."""
    limit = error.limit if isinstance(error.limit, dict) else {}
    named = list(limit.get("required", []))
    for option in limit.get("anyOf", []):
        named.extend(option.get("required", []))
    present = [k for k in named if isinstance(error.instance, dict) and k in error.instance]
    return (*path, present[-1]) if present else path


def _generic(error: _Failure, field: str) -> str:
    keyword, value, limit = error.keyword, error.instance, error.limit
    if keyword == "type":
        return _type_message(field, value, limit)
    if keyword in ("enum", "const"):
        return _enum_message(error, field)
    bounds = {
        "minimum": "at least",
        "maximum": "at most",
        "exclusiveMinimum": "more than",
        "exclusiveMaximum": "less than",
    }
    if keyword in bounds:
        return f"`{field}` must be {bounds[str(keyword)]} {limit}; got {show(value)}"
    if keyword == "minLength":
        return f"`{field}` must not be empty"
    if keyword == "maxLength":
        return f"`{field}` holds {len(value)} characters; at most {limit} are allowed"
    if keyword == "minItems":
        return f"`{field}` needs at least {limit} item{'s' if limit != 1 else ''}"
    if keyword == "maxItems":
        return f"`{field}` holds {len(value)} items; at most {limit} are allowed"
    if keyword == "pattern":
        return f"`{field}` {show(value)} does not have the expected form ({limit})"
    if keyword == "minProperties":
        return f"`{field}` must set at least {limit} key"
    return f"`{field}` is not valid here"


_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping of keys",
    "null": "null",
}


def _type_message(field: str, value: Any, expected: Any) -> str:
    kinds = [expected] if isinstance(expected, str) else list(expected)
    words = " or ".join(_TYPE_WORDS[k] for k in kinds if k != "null")
    return f"`{field}` must be {words or 'null'}, got {show(value)}{_type_hint(value, kinds)}"


def _type_hint(value: Any, kinds: list[str]) -> str:
    if "string" in kinds and isinstance(value, bool | int | float):
        return f'; put it in quotes: "{json.dumps(value)}"'
    if isinstance(value, str) and {"integer", "number"} & set(kinds):
        return "; write the number without quotes"
    if isinstance(value, str) and "boolean" in kinds and value.lower() in ("true", "false"):
        return "; write true or false without quotes"
    if "array" in kinds and not isinstance(value, list | dict):
        return f"; write a list: [{show(value)}]"
    if "object" in kinds and not isinstance(value, dict):
        return "; write `key: value` lines under it"
    return ""


def _enum_message(error: _Failure, field: str) -> str:
    value = error.instance
    allowed = [error.limit] if error.keyword == "const" else error.limit
    hint = error.schema.get("x-warp-value-hints", {}).get(value) if isinstance(value, str) else None
    if hint:
        return f"`{field}`: {hint}"
    listed = ", ".join(show(a) for a in allowed if a is not None)
    message = f"`{field}` must be one of {listed}; got {show(value)}"
    if not isinstance(value, str) and json.dumps(value) in [
        a for a in allowed if isinstance(a, str)
    ]:
        return f'{message}: put it in quotes, "{json.dumps(value)}"'
    close = (
        difflib.get_close_matches(value, [a for a in allowed if isinstance(a, str)], n=1)
        if (isinstance(value, str))
        else []
    )
    return f"{message}; did you mean {show(close[0])}?" if close else message
