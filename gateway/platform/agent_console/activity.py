"""A factory's activity over a window: its deliveries by outcome (those of its webhooks, and
the provider deliveries that started its runs) and its runs by state, bucketed by charts.py;
and the evaluator's lag, as the metrics report it."""

from __future__ import annotations

from datetime import datetime

import orjson
from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.agent_console.charts import Chart, Window, stacked
from gateway.platform.runs.record.states import RUN_STATES

LIMIT = 20_000  # rows read per chart: a busy day is drawn from its newest ones
OUTCOMES = ["matched", "no_match", "no_automations", "pending", "duplicate", "rejected"]


async def delivery_chart(
    conn: AsyncConnection, factory_uid: str, window: Window, now: datetime
) -> Chart:
    d, w, r = t.deliveries, t.webhooks, t.runs
    hooks = select(w.c.uid).where(w.c.factory_uid == factory_uid)
    started = select(r.c.delivery_id).where(
        r.c.factory_uid == factory_uid, r.c.delivery_id.is_not(None)
    )
    query = (
        select(d.c.received_at, d.c.label, d.c.evaluation, d.c.trace)
        .where(
            d.c.received_at >= now - window.span,
            or_(d.c.webhook_uid.in_(hooks), d.c.delivery_id.in_(started)),
        )
        .order_by(d.c.received_at.desc())
        .limit(LIMIT)
    )
    moments = [(row.received_at, _outcome(row)) for row in await conn.execute(query)]
    return stacked("Deliveries by outcome", window, now, moments, OUTCOMES)


def _outcome(row: object) -> str:
    trace = getattr(row, "trace", None)
    if trace:
        try:
            return str(orjson.loads(trace)["outcome"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return "unknown"
    if getattr(row, "evaluation", None) == "pending":
        return "pending"
    label = str(getattr(row, "label", ""))
    return (
        "duplicate"
        if label == "Duplicate"
        else "rejected"
        if label.startswith("Rejected")
        else "unknown"
    )


async def run_chart(
    conn: AsyncConnection, factory_uid: str, window: Window, now: datetime
) -> Chart:
    r = t.runs
    query = (
        select(r.c.created_at, r.c.state)
        .where(r.c.factory_uid == factory_uid, r.c.created_at >= now - window.span)
        .order_by(r.c.created_at.desc())
        .limit(LIMIT)
    )
    moments = [(row.created_at, row.state) for row in await conn.execute(query)]
    return stacked("Runs by state (when created)", window, now, moments, list(RUN_STATES))
