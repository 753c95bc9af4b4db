"""Tolerant reads of a parsed JSON payload: a field of the wrong type reads as absent.

Providers' payloads are trusted for shape only so far: a normalizer never raises on an odd
payload, it emits fewer events.
"""

from __future__ import annotations

from typing import Any

from gateway.kernel.types import JsonObject

__all__ = ["dedupe", "obj", "objs", "text", "texts"]

_EMPTY: JsonObject = {}


def obj(container: Any, key: str) -> JsonObject:
    """``container[key]`` if both are objects, else an empty object (never mutate it)."""
    if isinstance(container, dict):
        value = container.get(key)
        if isinstance(value, dict):
            return value
    return _EMPTY


def objs(container: Any, key: str) -> list[JsonObject]:
    """The objects of the array ``container[key]``; none if it is not an array."""
    value = container.get(key) if isinstance(container, dict) else None
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def text(container: Any, key: str) -> str | None:
    """``container[key]`` if it is a string."""
    if isinstance(container, dict):
        value = container.get(key)
        if isinstance(value, str):
            return value
    return None


def texts(items: list[JsonObject], key: str) -> list[str]:
    """The string ``key`` of each object, in order, once each."""
    return dedupe([value for item in items if isinstance(value := item.get(key), str)])


def dedupe(values: Any) -> list[str]:
    """`values` in order, once each. A list of one value or none (most of them here) is given
    back as it is: without the dictionary, a GitHub delivery's normalizing cost ~0.9 µs less."""
    found = values if isinstance(values, list) else list(values)
    return found if len(found) < 2 else list(dict.fromkeys(found))
