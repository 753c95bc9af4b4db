"""The grid's end-to-end figures: deliveries accepted *and* turned into runs per second, and the
CPU every process spent per delivery, each against the bare endpoint of the same run.

- **runs/s end to end**: the runs a round's deliveries started, over the load's time plus the
  time the evaluator needed afterwards to drain what was left (`accounting.wait_for_drain`). A
  provider delivery about an issue that has a run already follows that run up instead (the
  grid's GitHub deliveries name 64 issues): its follow-up counts as its run. A round that did
  not drain within the wait has no figure (it fails the target).
- **CPU per delivery, all processes**: the server (load and drain), the evaluator (load and
  drain) and Redis (load and drain), over the deliveries evaluated; the bare endpoint's is its
  server's CPU per request. The load generator is left out of both (it is the same wrk).
- Per round, p99 at the grid's connections.

The targets (issue 47, 2 cores): Redis >= 0.65x and embedded >= 0.55x the bare endpoint's
req/s; all-process CPU <= 2.5x the bare endpoint's per request; p99 < 25 ms in every round.
They are printed as met or not; they do not fail the run (timing never asserts).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from benchmarks.stats import summary

RATIO_TARGETS = {"gateway-redis": 0.65, "gateway-embedded": 0.55}
CPU_RATIO_TARGET = 2.5
P99_TARGET_MS = 25.0
STAGES = ("server", "evaluator", "redis")  # the processes a delivery costs CPU in


def row_figures(row: dict[str, Any]) -> dict[str, Any] | None:
    """One round's end-to-end runs/s and all-process CPU per delivery (µs), or None for a row
    without an evaluator (the bare endpoint, a gateway measured without one)."""
    ev = row.get("evaluator")
    if not isinstance(ev, dict):
        return None
    delivered = ev["deliveries_evaluated"]
    if not delivered:
        return None
    requests = row["requests"]
    stages = {
        stage: ((row.get(f"{stage}_cpu_s_per_1k") or 0.0) * requests / 1000
                + (row.get(f"{stage}_cpu_s_drain") or 0.0)) / delivered * 1e6
        for stage in STAGES
    }  # fmt: skip
    drained = ev["drain_s"] is not None
    return {
        "runs_per_s": ev.get("runs_or_follow_ups_per_s", ev["runs_created_per_s"])
        if drained
        else None,
        "cpu_us_per_delivery": sum(stages.values()),
        "stage_us_per_delivery": stages,
        "p99_ms": row["latency_ms"]["p99"],
    }


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per gateway (server, workers, scenario, body): its rounds' figures against the bare
    endpoint's (the `ceiling` rows of the same workers and body) in the same run."""
    bare: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    gateways: dict[tuple[str, int, str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["failures"]:
            continue
        if row["server"] == "ceiling" and row["scenario"] == "spread":
            bare[(row["workers"], row["body_bytes"])].append(row)
        elif row.get("evaluator"):
            gateways[(row["server"], row["workers"], row["scenario"], row["body_bytes"])].append(
                row
            )
    out = []
    for (server, workers, scenario, body), members in gateways.items():
        base = bare.get((workers, body))
        if not base:
            continue
        base_rps = statistics.median(r["rps"] for r in base)
        base_cpu = statistics.median(r["server_cpu_s_per_1k"] for r in base) * 1000
        figures = [f for f in (row_figures(m) for m in members) if f is not None]
        runs = [f["runs_per_s"] for f in figures]
        drained = [r for r in runs if r is not None]
        ratio = statistics.median(r / base_rps for r in runs) if len(drained) == len(runs) else 0
        cpu = summary([f["cpu_us_per_delivery"] for f in figures])
        p99s = [f["p99_ms"] for f in figures]
        kind = server.partition("@")[0]
        out.append(
            {
                "server": server,
                "workers": workers,
                "scenario": scenario,
                "body_bytes": body,
                "rounds": len(figures),
                "bare_rps": base_rps,
                "bare_cpu_us_per_request": base_cpu,
                "runs_per_s": summary(drained),
                "undrained_rounds": len(runs) - len(drained),
                "ratio": ratio,
                "ratio_target": RATIO_TARGETS.get(kind),
                "cpu_us_per_delivery": cpu,
                "cpu_ratio": cpu["median"] / base_cpu if cpu and base_cpu else None,
                "stage_us_per_delivery": {
                    stage: statistics.median(f["stage_us_per_delivery"][stage] for f in figures)
                    for stage in STAGES
                }
                if figures
                else {},
                "p99_ms": summary(p99s),
                "p99_all_under_target": all(p < P99_TARGET_MS for p in p99s),
            }
        )
    return out


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def table(items: list[dict[str, Any]]) -> str:
    head = (
        f"{'end to end':<23}{'w':>2} {'scenario':<10}{'body':>7}{'runs/s':>8}{'x bare':>8}"
        f"{'target':>8}{'cpu µs/del':>11}{'x bare':>8}{'p99 max':>9}  targets"
    )
    lines = [head, "-" * len(head)]
    for item in items:
        runs = item["runs_per_s"]
        cpu_ratio = item["cpu_ratio"]
        target = item["ratio_target"]
        verdicts = [
            f"ratio {_met(target is not None and item['ratio'] >= target)}",
            f"cpu {_met(cpu_ratio is not None and cpu_ratio <= CPU_RATIO_TARGET)}",
            f"p99 {_met(item['p99_all_under_target'])}",
        ]
        lines.append(
            f"{item['server']:<23}{item['workers']:>2} {item['scenario']:<10}"
            f"{item['body_bytes']:>7}{runs['median'] if runs else 0:>8.0f}{item['ratio']:>8.2f}"
            f"{target if target is not None else 0:>8.2f}"
            f"{item['cpu_us_per_delivery'].get('median', 0):>11.0f}"
            f"{cpu_ratio or 0:>8.2f}{item['p99_ms'].get('max', 0):>9.1f}  " + ", ".join(verdicts)
        )
    return "\n".join(lines)


def markdown(items: list[dict[str, Any]]) -> str:
    lines = [
        "| server | scenario | body | rounds | runs/s end to end (median) | x bare req/s "
        "| all-process CPU µs/delivery (median, min-max) | x bare CPU/request "
        "| p99 ms (max over rounds) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for item in items:
        cpu = item["cpu_us_per_delivery"]
        runs = item["runs_per_s"]
        undrained = f" ({item['undrained_rounds']} not drained)" if item["undrained_rounds"] else ""
        lines.append(
            f"| {item['server']} | {item['scenario']} | {item['body_bytes'] // 1024} KB "
            f"| {item['rounds']} "
            f"| {runs['median'] if runs else 0:,.0f}{undrained} | **{item['ratio']:.2f}** "
            f"| {cpu['median']:,.0f} ({cpu['min']:,.0f}-{cpu['max']:,.0f}) "
            f"| **{item['cpu_ratio'] or 0:.2f}** | {item['p99_ms']['max']:.1f} |"
        )
    return "\n".join(lines)


def stage_markdown(items: list[dict[str, Any]]) -> str:
    """Where a delivery's CPU goes: each process's µs per delivery (median over rounds)."""
    lines = [
        "| server | scenario | bare endpoint µs/request | ingress server µs/delivery "
        "| evaluator | Redis | all |",
        "|---|---|---|---|---|---|---|",
    ]
    for item in items:
        stages = item["stage_us_per_delivery"]
        lines.append(
            f"| {item['server']} | {item['scenario']} | {item['bare_cpu_us_per_request']:,.0f} "
            + "".join(f"| {stages.get(stage, 0):,.0f} " for stage in STAGES)
            + f"| {item['cpu_us_per_delivery'].get('median', 0):,.0f} |"
        )
    return "\n".join(lines)
