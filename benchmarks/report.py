"""Aggregate rows over rounds, print the table, write the JSON report."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.stats import ratio, summary

RESULTS = Path(__file__).parent / "results"


def group_key(row: dict[str, Any]) -> tuple[str, int, str, int]:
    return (row["server"], row["workers"], row["scenario"], row["body_bytes"])


def aggregate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int, str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[group_key(row)].append(row)
    out = []
    for (server, workers, scenario, body), members in groups.items():
        out.append(
            {
                "server": server,
                "workers": workers,
                "scenario": scenario,
                "body_bytes": body,
                "rounds": len(members),
                "rps": summary([m["rps"] for m in members]),
                "p50_ms": summary([m["latency_ms"]["p50"] for m in members]),
                "p99_ms": summary([m["latency_ms"]["p99"] for m in members]),
                "p999_ms": summary([m["latency_ms"]["p999"] for m in members]),
                "server_cpu_s_per_1k": summary([m["server_cpu_s_per_1k"] for m in members]),
                "peak_rss_mib": summary([m["peak_rss_mib"] for m in members]),
                "peak_rss_mib_per_worker": summary([m["peak_rss_mib_per_worker"] for m in members]),
                "evaluator_cpu_s_per_1k": _optional(members, "evaluator_cpu_s_per_1k"),
                "evaluator_peak_rss_mib": _optional(members, "evaluator_peak_rss_mib"),
                "failed": any(m["failures"] for m in members),
            }
        )
    return out


def _optional(members: list[dict[str, Any]], key: str) -> dict[str, float] | None:
    values = [m[key] for m in members if m.get(key) is not None]
    return summary(values) if values else None


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """gateway/ceiling and gateway/naive requests/s under the same HTTP server, and each target
    under another HTTP server against itself under uvicorn; per workers and body size (spread
    only)."""
    by: dict[tuple[str, int, int], list[float]] = defaultdict(list)
    provider: dict[tuple[str, int, int], list[float]] = defaultdict(list)
    for row in rows:
        if row["failures"]:
            continue
        if row["scenario"] == "spread":
            by[(row["server"], row["workers"], row["body_bytes"])].append(row["rps"])
        elif row["scenario"] == "provider":
            provider[(row["server"], row["workers"], row["body_bytes"])].append(row["rps"])
    out = []
    for (server, workers, body), values in sorted(provider.items()):
        webhook = by.get((server, workers, body))
        if webhook:  # provider deliveries against custom-webhook ones, same server
            out.append(
                {
                    "ratio": f"{server} provider/custom webhook",
                    "workers": workers,
                    "body_bytes": body,
                    "rps": ratio(values, webhook),
                }
            )
    for (server, workers, body), values in sorted(by.items()):
        kind, _, http = server.partition("@")
        suffix = f"@{http}" if http else ""
        bases = [f"{b}{suffix}" for b in ("ceiling", "naive")] if kind.startswith("gateway") else []
        bases += [kind] if http else []
        for base in bases:
            other = by.get((base, workers, body))
            if other:
                out.append(
                    {
                        "ratio": f"{server}/{base}",
                        "workers": workers,
                        "body_bytes": body,
                        "rps": ratio(values, other),
                    }
                )
    return out


def table(groups: list[dict[str, Any]]) -> str:
    head = (
        f"{'server':<23}{'w':>2} {'scenario':<10}{'body':>7} "
        f"{'req/s med':>10}{'min':>8}{'max':>8} {'p50ms':>7}{'p99ms':>8}{'p99.9ms':>9} "
        f"{'cpu s/1k':>9}{'+eval':>7}{'rss/w MiB':>10}{'eval MiB':>9}  ok"
    )
    lines = [head, "-" * len(head)]
    for g in groups:
        lines.append(
            f"{g['server']:<23}{g['workers']:>2} {g['scenario']:<10}{g['body_bytes']:>7} "
            f"{g['rps']['median']:>10.0f}{g['rps']['min']:>8.0f}{g['rps']['max']:>8.0f} "
            f"{g['p50_ms']['median']:>7.2f}{g['p99_ms']['median']:>8.2f}"
            f"{g['p999_ms']['median']:>9.2f} "
            f"{g['server_cpu_s_per_1k']['median']:>9.3f}{_cell(g['evaluator_cpu_s_per_1k'], 7, 3)}"
            f"{g['peak_rss_mib_per_worker']['median']:>10.0f}"
            f"{_cell(g['evaluator_peak_rss_mib'], 9, 0)}  "
            f"{'FAILED' if g['failed'] else 'yes'}"
        )
    return "\n".join(lines)


def _cell(value: dict[str, float] | None, width: int, digits: int) -> str:
    return f"{value['median']:>{width}.{digits}f}" if value else f"{'-':>{width}}"


def ratio_table(items: list[dict[str, Any]]) -> str:
    lines = [f"{'ratio (req/s)':<44}{'w':>2}{'body':>8}{'median':>8}{'min':>8}{'max':>8}"]
    for r in items:
        rps = r["rps"]
        lines.append(
            f"{r['ratio']:<44}{r['workers']:>2}{r['body_bytes']:>8}"
            f"{rps['median']:>8.2f}{rps['min']:>8.2f}{rps['max']:>8.2f}"
        )
    return "\n".join(lines)


def evaluator_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"{'server':<23}{'w':>2} {'scenario':<10}{'body':>7}{'r':>3} "
        f"{'eval/s':>8}{'runs/s':>8}{'backlog':>8}{'drain s':>8}"
    ]
    for row in rows:
        ev = row.get("evaluator")
        if not isinstance(ev, dict):
            continue
        drain = f">{ev['drain_wait_s']:.0f}" if ev["drain_s"] is None else f"{ev['drain_s']:.1f}"
        lines.append(
            f"{row['server']:<23}{row['workers']:>2} {row['scenario']:<10}{row['body_bytes']:>7}"
            f"{row['round']:>3} {ev['deliveries_evaluated_per_s']:>8.0f}"
            f"{ev['runs_created_per_s']:>8.0f}{ev['backlog_at_end']:>8}{drain:>8}"
        )
    return "\n".join(lines)


def latency_table(items: list[dict[str, Any]]) -> str:
    lines = [
        f"{'server':<23}{'load':>5}{'offered':>9}{'achieved':>9}{'p50ms':>8}{'p99ms':>8}"
        f"{'p99.9ms':>9}  statuses"
    ]
    for item in items:
        if "latency_ms" not in item:
            lines.append(f"{item['server']:<23}{item['fraction']:>5.0%}  FAILED")
            continue
        lat = item["latency_ms"]
        lines.append(
            f"{item['server']:<23}{item['fraction']:>5.0%}{item['offered_rps']:>9.0f}"
            f"{item['achieved_rps']:>9.0f}{lat['p50']:>8.2f}{lat['p99']:>8.2f}{lat['p999']:>9.2f}"
            f"  {item['statuses']}"
        )
    return "\n".join(lines)


def latency_summary(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """p99 per server and load over the rounds (median, min, max)."""
    by: dict[tuple[str, float], list[dict[str, Any]]] = defaultdict(list)
    for item in items:
        if "latency_ms" in item and not item["failures"]:
            by[(item["server"], item["fraction"])].append(item)
    return [
        {
            "server": server,
            "fraction": fraction,
            "rounds": len(members),
            "offered_rps": members[0]["offered_rps"],
            "p99_ms": summary([m["latency_ms"]["p99"] for m in members]),
            "p999_ms": summary([m["latency_ms"]["p999"] for m in members]),
        }
        for (server, fraction), members in by.items()
    ]


def latency_summary_table(items: list[dict[str, Any]]) -> str:
    lines = [f"{'p99 over rounds':<23}{'load':>5}{'offered':>9}{'median':>8}{'min':>8}{'max':>8}"]
    for item in items:
        p99 = item["p99_ms"]
        lines.append(
            f"{item['server']:<23}{item['fraction']:>5.0%}{item['offered_rps']:>9.0f}"
            f"{p99['median']:>8.2f}{p99['min']:>8.2f}{p99['max']:>8.2f}"
        )
    return "\n".join(lines)


def write(report: dict[str, Any]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"{stamp}.json"
    path.write_text(json.dumps(report, indent=2, default=str))
    return path
