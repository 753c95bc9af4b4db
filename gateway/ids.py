"""Public identifiers: a short type prefix and 128 random bits, sortable by creation time."""

from __future__ import annotations

import os
import time


def new_id(prefix: str) -> str:
    """`prefix_` + 12 hex digits of milliseconds + 20 random hex digits."""
    return f"{prefix}_{int(time.time() * 1000):012x}{os.urandom(10).hex()}"


def new_uuid() -> str:
    """A UUID4 string, for run and task ids that clients parse as UUIDs."""
    import uuid

    return str(uuid.uuid4())
