"""Usage a run's harness reports (spec 4.9, raw third-party harness usage): each report is a
cumulative snapshot of one claim attempt's usage of one model, so the latest replaces that
attempt's earlier rows of the model; a metric a snapshot does not carry is unavailable (null when
read), never 0. The rows (one per cost component; tokens ride on the first) are what factory
costs sum (docs/metrics.md), with unreported figures stored as 0 and named in `unreported`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from msgspec import structs
from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.platform.analytics import pr_costs
from gateway.platform.runners.leases import held_run
from gateway.platform.runners.models import RunUsage, Usage, UsageDimensions, UsageLine
from gateway.platform.runners.registry import Runner

u = t.run_usage
METRICS = ("input_tokens", "output_tokens", "cost_usd")
PLACEHOLDER = "tokens"  # the component of a snapshot without costs


async def report_usage(conn: AsyncConnection, runner: Runner, run_id: str, usage: Usage) -> None:
    """The run's latest snapshot for (its current claim attempt, `usage.model_id`)."""
    run = await held_run(conn, runner, run_id)
    costs = dict(usage.cost_usd or {})
    missing = [name for name in METRICS if not _carried(usage, name)]
    await conn.execute(
        delete(u).where(
            u.c.run_id == run_id,
            u.c.attempt == run.attempts,
            u.c.model_id.is_not_distinct_from(usage.model_id),
        )
    )
    about_run = structs.asdict(UsageDimensions.of(run))
    now = utcnow()
    components = list(costs.items()) or [(PLACEHOLDER, 0.0)]
    await conn.execute(
        insert(u),
        [
            {
                "id": ids.new_id("use"),
                "run_id": run_id,
                "model_id": usage.model_id,
                "input_tokens": (usage.input_tokens or 0) if i == 0 else 0,
                "output_tokens": (usage.output_tokens or 0) if i == 0 else 0,
                "component": component,
                "cost_usd": dollars,
                "reported_at": now,
                "attempt": run.attempts,
                "unreported": ",".join(missing) or None,
                **about_run,
            }
            for i, (component, dollars) in enumerate(components)
        ],
    )
    await pr_costs.refresh_tree(conn, run.root_run_id)  # the tree's PRs cost what it says now


def _carried(usage: Usage, metric: str) -> bool:
    if metric == "cost_usd":
        return bool(usage.cost_usd)
    return getattr(usage, metric) is not None


@dataclass(slots=True)
class _Sum:
    """A figure summed over the rows that reported it; None while none did."""

    value: float | None = None

    def add(self, amount: float) -> None:
        self.value = amount if self.value is None else self.value + amount


async def usage_of(conn: AsyncConnection, run_id: str) -> RunUsage:
    """The run's usage: its latest snapshots summed over attempts and models, in all and per
    (model, component); what no snapshot reported is null."""
    query = select(u).where(u.c.run_id == run_id).order_by(u.c.model_id, u.c.component)
    totals = {name: _Sum() for name in METRICS}
    lines: dict[tuple[str | None, str], dict[str, _Sum]] = {}
    for row in await conn.execute(query):
        line = lines.setdefault((row.model_id, row.component), {n: _Sum() for n in METRICS})
        for name, amount in _reported(row):
            totals[name].add(amount)
            line[name].add(amount)
    return RunUsage(
        run_id=run_id,
        input_tokens=_int(totals["input_tokens"].value),
        output_tokens=_int(totals["output_tokens"].value),
        cost_usd=_dollars(totals["cost_usd"].value),
        components=[
            UsageLine(
                model_id=model_id,
                component=component,
                input_tokens=_int(sums["input_tokens"].value),
                output_tokens=_int(sums["output_tokens"].value),
                cost_usd=_dollars(sums["cost_usd"].value),
            )
            for (model_id, component), sums in sorted(lines.items(), key=_line_order)
        ],
    )


def _reported(row: Any) -> Iterable[tuple[str, float]]:
    """(metric, amount) of what the row's snapshot reported."""
    unreported = set((row.unreported or "").split(","))
    for name in METRICS:
        if name not in unreported:
            yield name, float(getattr(row, name))


def _line_order(item: tuple[tuple[str | None, str], Any]) -> tuple[str, str]:
    (model_id, component), _ = item
    return model_id or "", component


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _dollars(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
