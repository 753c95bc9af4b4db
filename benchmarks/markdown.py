"""Markdown tables of one benchmark report, for docs/performance.md.

python -m benchmarks.markdown benchmarks/results/<stamp>.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks import end_to_end


def _spread(s: dict[str, float] | None, digits: int = 0) -> str:
    if not s:
        return "-"
    if s["min"] == s["max"]:
        return f"{s['median']:,.{digits}f}"
    return f"{s['median']:,.{digits}f} ({s['min']:,.{digits}f}-{s['max']:,.{digits}f})"


def _kb(size: int) -> str:
    return f"{size // 1024} KB"


def _median(s: dict[str, float] | None, scale: float = 1.0) -> str:
    return f"{s['median'] * scale:,.0f}" if s else "-"


def groups(report: dict[str, Any]) -> str:
    lines = [
        "| server | w | scenario | body | req/s median (min-max) | p50 ms | p99 ms | p99.9 ms "
        "| server CPU µs/req | evaluator CPU µs/req | RSS/worker MiB | evaluator RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g in report["groups"]:
        lines.append(
            f"| {g['server']} | {g['workers']} | {g['scenario']} | {_kb(g['body_bytes'])} "
            f"| {_spread(g['rps'])} | {g['p50_ms']['median']:.2f} | {g['p99_ms']['median']:.2f} "
            f"| {g['p999_ms']['median']:.1f} | {_median(g['server_cpu_s_per_1k'], 1000)} "
            f"| {_median(g.get('evaluator_cpu_s_per_1k'), 1000)} "
            f"| {_median(g['peak_rss_mib_per_worker'])} "
            f"| {_median(g.get('evaluator_peak_rss_mib'))} |"
        )
    return "\n".join(lines)


def ratios(report: dict[str, Any]) -> str:
    lines = [
        "| ratio (req/s) | w | body | median | min-max over round pairs |",
        "|---|---|---|---|---|",
    ]
    for r in report["ratios"]:
        rps = r["rps"]
        lines.append(
            f"| {r['ratio']} | {r['workers']} | {_kb(r['body_bytes'])} | **{rps['median']:.2f}** "
            f"| {rps['min']:.2f}-{rps['max']:.2f} |"
        )
    return "\n".join(lines)


def evaluator(report: dict[str, Any]) -> str:
    lines = [
        "| server | w | scenario | body | round | evaluated/s | runs/s | backlog at end "
        "| drain s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        ev = row.get("evaluator")
        if not isinstance(ev, dict):
            continue
        drain = f"> {ev['drain_wait_s']:.0f}" if ev["drain_s"] is None else f"{ev['drain_s']:.1f}"
        lines.append(
            f"| {row['server']} | {row['workers']} | {row['scenario']} | {_kb(row['body_bytes'])} "
            f"| {row['round']} "
            f"| {ev['deliveries_evaluated_per_s']:,.0f} | {ev['runs_created_per_s']:,.0f} "
            f"| {ev['backlog_at_end']:,} | {drain} |"
        )
    return "\n".join(lines)


def end_to_end_rows(report: dict[str, Any]) -> str:
    items = report.get("end_to_end", [])
    return f"{end_to_end.markdown(items)}\n\n{end_to_end.stage_markdown(items)}"


def latency(report: dict[str, Any]) -> str:
    lines = [
        "| server | load | round | offered/s | achieved/s | p50 ms | p99 ms | p99.9 ms "
        "| generator |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for item in report["latency_under_load"]:
        if "latency_ms" not in item:
            lines.append(f"| {item['server']} | {item['fraction']:.0%} | failed | | | | | | |")
            continue
        lat = item["latency_ms"]
        lines.append(
            f"| {item['server']} | {item['fraction']:.0%} | {item.get('round', 1)} "
            f"| {item['offered_rps']:,.0f} "
            f"| {item['achieved_rps']:,.0f} | {lat['p50']:.2f} | {lat['p99']:.2f} "
            f"| {lat['p999']:.2f} | {item.get('generator', '')} |"
        )
    return "\n".join(lines)


def latency_summary(report: dict[str, Any]) -> str:
    lines = [
        "| server | load | offered/s | rounds | p99 ms median (min-max) | p99.9 ms median |",
        "|---|---|---|---|---|---|",
    ]
    for item in report.get("latency_summary", []):
        p99 = item["p99_ms"]
        lines.append(
            f"| {item['server']} | {item['fraction']:.0%} "
            f"| {item['offered_rps']:,.0f} "
            f"| {item['rounds']} | **{p99['median']:.2f}** ({p99['min']:.2f}-{p99['max']:.2f}) "
            f"| {item['p999_ms']['median']:.2f} |"
        )
    return "\n".join(lines)


def profile(report: dict[str, Any]) -> str:
    lines = ["| % of samples (self) | frame |", "|---|---|"]
    for row in report["rows"]:
        if "profile" in row:
            for frame, pct in row["profile"].get("top_self_pct", [])[:15]:
                lines.append(f"| {pct:.1f} | `{frame}` |")
            break
    return "\n".join(lines)


def main() -> None:
    report = json.loads(Path(sys.argv[1]).read_text())
    for title, render in (
        ("Closed loop", groups),
        ("Ratios", ratios),
        ("Evaluator", evaluator),
        ("End to end", end_to_end_rows),
        ("Latency under load", latency),
        ("Latency summary", latency_summary),
        ("Profile", profile),
    ):
        print(f"### {title}\n\n{render(report)}\n")


if __name__ == "__main__":
    main()
