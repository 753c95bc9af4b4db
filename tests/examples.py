"""How many examples a property test tries: its full count, or a quarter of it (at least 5) under
`scripts/test --fast`, which sets GATEWAY_TEST_FAST=1. The full run keeps every count."""

from __future__ import annotations

import os

FAST = os.environ.get("GATEWAY_TEST_FAST") == "1"


def examples(full: int) -> int:
    return max(5, full // 4) if FAST else full


def at_least(full: int) -> int:
    """A property test's floor on how many of its examples were of a kind: the full run's floor,
    or a tenth of it under --fast (a quarter of the examples, and mostly the simple ones
    hypothesis tries first)."""
    return full // 10 if FAST else full
