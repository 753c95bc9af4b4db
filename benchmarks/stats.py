"""Small statistics over rounds: median, min, max, and ratios with their spread."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def summary(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def ratio(numerator: Sequence[float], denominator: Sequence[float]) -> dict[str, float]:
    """median/median, plus the lowest and highest ratio over all pairs of rounds."""
    if not numerator or not denominator:
        return {}
    pairs = [a / b for a in numerator for b in denominator if b]
    return {
        "median": statistics.median(numerator) / statistics.median(denominator),
        "min": min(pairs),
        "max": max(pairs),
    }
