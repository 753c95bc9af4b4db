"""PromQL, the few forms docs/grafana-dashboard.json uses (rate, sum by, max,
histogram_quantile), evaluated over a series of /metrics scrapes: benchmarks/dashboard_picture.py
draws the dashboard with it, and tests/metrics/test_dashboard.py checks every panel's query is a
form it can draw."""

from __future__ import annotations

import math
import re
from collections import defaultdict

Labels = frozenset[tuple[str, str]]
Scrape = dict[str, dict[Labels, float]]  # sample name -> labels -> value

_SELECTOR = r"(?P<name>[a-z_]+)(?:\{(?P<match>[^}]*)\})?\[(?P<window>\w+)\]"
FORMS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"^sum by \((?P<by>\w+)\) \(rate\({_SELECTOR}\)\)$"), "sum_by_rate"),
    (re.compile(rf"^sum\(rate\({_SELECTOR}\)\)$"), "sum_rate"),
    (re.compile(r"^max\((?P<name>[a-z_]+)\)$"), "max"),
    (
        re.compile(
            rf"^histogram_quantile\((?P<q>[0-9.]+), sum by \(le\) \(rate\({_SELECTOR}\)\)\)$"
        ),
        "quantile",
    ),
]


def parse_expr(expr: str) -> tuple[str, dict[str, str]]:
    """(form, its parts); ValueError for a form this script cannot draw."""
    for pattern, form in FORMS:
        found = pattern.match(expr)
        if found:
            return form, {k: v for k, v in found.groupdict().items() if v is not None}
    raise ValueError(f"cannot evaluate {expr!r}")


def _matches(labels: Labels, match: str) -> bool:
    for clause in filter(None, (c.strip() for c in match.split(","))):
        name, op, pattern = re.match(r'(\w+)\s*(!~|=~|!=|=)\s*"(.*)"', clause).groups()
        value = dict(labels).get(name, "")
        ok = re.fullmatch(pattern, value) is not None if "~" in op else value == pattern
        if ok == op.startswith("!"):
            return False
    return True


def evaluate(expr: str, scrapes: list[tuple[float, Scrape]], window: float) -> dict[str, list]:
    """Each output series (by its label values) over the scrape times."""
    form, parts = parse_expr(expr)
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for i, (t, now) in enumerate(scrapes):
        if form == "max":
            values = now.get(parts["name"], {})
            if values:
                out[""].append((t, max(values.values())))
            continue
        j = i
        while j > 0 and t - scrapes[j - 1][0] <= window:
            j -= 1
        if j == i:
            continue
        t0, then = scrapes[j]
        name, match = parts["name"], parts.get("match", "")
        rates: dict[Labels, float] = {}
        for labels, value in now.get(name, {}).items():
            if _matches(labels, match):
                earlier = then.get(name, {}).get(labels, 0.0)
                rates[labels] = max(0.0, value - earlier) / (t - t0)
        if form == "quantile":
            buckets: dict[float, float] = defaultdict(float)
            for labels, rate in rates.items():
                buckets[float(dict(labels)["le"])] += rate
            q = _quantile(float(parts["q"]), sorted(buckets.items()))
            if q is not None:
                out[""].append((t, q))
            continue
        by = parts.get("by")
        grouped: dict[str, float] = defaultdict(float)
        for labels, rate in rates.items():
            grouped[dict(labels).get(by, "") if by else ""] += rate
        for key, rate in grouped.items():
            out[key].append((t, rate))
    return out


def _quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus's histogram_quantile over cumulative (upper bound, rate) pairs."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower
            return lower + (bound - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = bound, count
    return None
