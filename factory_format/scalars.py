"""Plain YAML scalars resolved by the YAML 1.2 core schema: only `true`/`false`, null, and
numbers are typed; `yes`, `on`, `2024-01-01` and `1_000` stay strings (YAML 1.1 would make
them booleans, dates and integers, which surprises authors: the "Norway problem")."""

from __future__ import annotations

import re

__all__ = ["Scalar", "resolve_plain"]

Scalar = str | int | float | bool | None

_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})
_INT = re.compile(r"[-+]?[0-9]+\Z")
_OCTAL = re.compile(r"0o[0-7]+\Z")
_HEX = re.compile(r"0x[0-9a-fA-F]+\Z")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_INF = re.compile(r"[-+]?\.(inf|Inf|INF)\Z")
_NAN = re.compile(r"\.(nan|NaN|NAN)\Z")


MAX_DIGITS = 100  # longer numerals stay strings: no key takes such a number


def resolve_plain(text: str) -> Scalar:
    if len(text) > MAX_DIGITS:
        return text
    if text in _NULL:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT.match(text):
        return int(text)
    if _OCTAL.match(text):
        return int(text[2:], 8)
    if _HEX.match(text):
        return int(text[2:], 16)
    if _FLOAT.match(text):
        return float(text)
    if _INF.match(text):
        return float("-inf") if text.startswith("-") else float("inf")
    if _NAN.match(text):
        return float("nan")
    return text
