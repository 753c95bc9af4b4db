"""Factory metrics computed by the store on SQLite and PostgreSQL, against the hand-computed
figures of tests/platform/analytics/metrics_data.py (its table explains every number below)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from msgspec import UNSET

from gateway.foundation.services import Services
from gateway.kernel.errors import InvalidRequest
from gateway.platform.analytics import costs as factory_costs
from gateway.platform.analytics import metrics as factory_metrics
from gateway.platform.analytics import pull_requests, run_counts
from gateway.platform.analytics.models import (
    Autonomy,
    ComponentCost,
    CostPerPrSeries,
    Impact,
    MetricsSeries,
    PrComponentCost,
    PrLatency,
    SizeBucket,
)
from gateway.platform.analytics.window import MAX_PERIODS, Period, window
from tests.platform.analytics.metrics_data import History, at, build
from tests.support import GatewayClient

START, END = at(10, 1), at(10, 15)
WEEKS = [date(2026, 9, 28), date(2026, 10, 5), date(2026, 10, 12)]


@pytest.fixture
def history(client: GatewayClient) -> History:
    return client.run(build)


def query(client: GatewayClient, fn: Any, *args: Any) -> Any:
    async def go(services: Services) -> Any:
        async with services.database.read() as conn:
            return await fn(conn, *args)

    return client.run(go)


def span(period: Period | None = None, start: Any = START, end: Any = END) -> Any:
    return window(start, end, period, now=END)


def test_metrics_count_runs_prs_autonomy_impact_and_latency(
    client: GatewayClient, history: History
) -> None:
    found = query(client, factory_metrics.factory_metrics, history.factory_uid, span())
    assert found.run_count == 4  # r1 r2 r3 r7
    assert found.pr_count == 4  # a b c d: e first appeared before, g is G's
    assert found.autonomy == Autonomy(autonomous_run_count=3, rate=0.75)
    assert found.impact == Impact(
        merged_pr_count=2,
        open_pr_count=1,
        closed_pr_count=1,
        merge_rate=0.5,
    )
    # 86400 (a) + 7200 (b) + 3600 (c) + 1123200 (d): mean 305100
    assert found.pr_latency == PrLatency(mean_seconds=305100.0, max_seconds=1123200.0)
    assert found.series is UNSET and found.period_list is UNSET


def test_weekly_series_are_aligned_to_the_period_list(
    client: GatewayClient, history: History
) -> None:
    found = query(client, factory_metrics.factory_metrics, history.factory_uid, span("week"))
    assert found.period_list == WEEKS
    assert found.series == MetricsSeries(
        run_count=[2, 2, 0],
        autonomous_run_count=[1, 2, 0],
        pr_count=[3, 1, 0],
        merged_pr_count=[2, 0, 0],
        mean_pr_latency_seconds=[405600.0, 3600.0, None],
    )
    assert found.run_count == 4 and found.pr_count == 4


def test_daily_and_monthly_binning(client: GatewayClient, history: History) -> None:
    daily = query(client, factory_metrics.factory_metrics, history.factory_uid, span("day"))
    assert len(daily.period_list) == 14
    runs = dict(zip(daily.period_list, daily.series.run_count, strict=True))
    assert {day.isoformat(): n for day, n in runs.items() if n} == {
        "2026-10-01": 1,
        "2026-10-02": 1,
        "2026-10-05": 1,
        "2026-10-07": 1,
    }
    months = span("month", at(9, 15), at(11, 1))
    monthly = query(client, factory_metrics.factory_metrics, history.factory_uid, months)
    assert monthly.period_list == [date(2026, 9, 1), date(2026, 10, 1)]
    assert monthly.series.run_count == [1, 5]  # r4; r1 r2 r3 r7 r6


def test_cost_per_pr_splits_a_tree_among_its_prs(client: GatewayClient, history: History) -> None:
    found = query(client, factory_metrics.cost_per_pr, history.factory_uid, span("week"))
    assert found.pr_count == 4
    assert found.total_cost_usd == 5.75  # 1.75 + 1.75 + 0.25 + 2.00
    assert found.mean_cost_usd == 1.4375
    assert found.components == [
        ComponentCost(component="llm", total_cost_usd=5.25, mean_cost_usd=1.3125),
        ComponentCost(component="tools", total_cost_usd=0.5, mean_cost_usd=0.125),
    ]
    assert found.series == CostPerPrSeries(pr_count=[3, 1, 0], mean_cost_usd=[1.833333, 0.25, None])


@pytest.mark.parametrize(
    ("group_by", "expected"),
    [
        ("source", [("API", 3.5), ("WEBHOOK", 0.25)]),  # SCHEDULE spent nothing
        ("user", [("USER", 1.5), ("UNKNOWN", 2.25)]),
        ("agent", [("AGENT", 2.25), ("UNKNOWN", 1.5)]),
        ("model", [("m2", 2.0), ("m1", 1.5), ("UNKNOWN", 0.25)]),
    ],
)
def test_cost_breakdown_lists_every_spender_unknown_last(
    client: GatewayClient, history: History, group_by: Any, expected: list[Any]
) -> None:
    found = query(client, factory_costs.cost_breakdown, history.factory_uid, span("week"), group_by)
    names = {"USER": history.user_uid, "AGENT": history.agent_uid}
    got = [(g.key, g.cost_usd) for g in found.groups]
    assert got == [(names.get(key, key), cost) for key, cost in expected]
    assert found.total_cost_usd == 3.75
    assert sum(sum(g.cost_series) for g in found.groups) == pytest.approx(3.75)
    if group_by == "user":
        assert found.groups[0].label == history.user_email
    if group_by == "source":
        api = found.groups[0]
        assert (api.input_tokens, api.output_tokens, api.cost_series) == (
            300,
            30,
            [3.5, 0.0, 0.0],
        )


def test_top_prs_most_expensive_first_with_components(
    client: GatewayClient, history: History
) -> None:
    top = query(client, factory_costs.top_prs, history.factory_uid, span(), 50)
    assert [(pr.url, pr.cost_usd) for pr in top] == [
        (history.pr["d"], 2.0),
        (history.pr["a"], 1.75),  # ties with b: newer first
        (history.pr["b"], 1.75),
        (history.pr["c"], 0.25),
    ]
    a = top[1]
    assert a.components == [
        PrComponentCost(component="llm", cost_usd=1.5),
        PrComponentCost(component="tools", cost_usd=0.25),
    ]
    assert (a.state, a.run_id, a.root_run_id) == (
        "merged",
        history.run["r2"],
        history.run["r1"],
    )
    assert a.additions is None and a.merged_at is None  # no code-forge detail yet
    two = query(client, factory_costs.top_prs, history.factory_uid, span(), 2)
    assert [pr.url for pr in two] == [history.pr["d"], history.pr["a"]]


def test_pr_cost_by_size_uses_code_forge_detail(client: GatewayClient, history: History) -> None:
    async def describe(services: Services) -> list[bool]:
        async with services.database.transaction() as conn:
            return [
                await pull_requests.record_forge_detail(conn, _event(history.pr["a"], 30, 5)),
                await pull_requests.record_forge_detail(conn, _event(history.pr["d"], 600, 500)),
                await pull_requests.record_forge_detail(conn, _event("https://x.test/1", 1, 1)),
            ]

    assert client.run(describe) == [True, True, False]
    found = query(client, factory_costs.cost_by_size, history.factory_uid, span())
    buckets = {b.size: b for b in found.buckets}
    assert [b.size for b in found.buckets] == ["XS", "S", "M", "L", "XL", "UNKNOWN"]
    assert (buckets["S"].pr_count, buckets["S"].total_cost_usd) == (1, 1.75)
    assert (buckets["XL"].pr_count, buckets["XL"].mean_cost_usd) == (1, 2.0)
    assert buckets["UNKNOWN"] == SizeBucket(
        size="UNKNOWN",
        min_lines=None,
        max_lines=None,
        pr_count=2,
        total_cost_usd=2.0,
        mean_cost_usd=1.0,
        min_cost_usd=0.25,
        max_cost_usd=1.75,
    )
    assert buckets["M"].pr_count == 0 and buckets["M"].mean_cost_usd is None
    top = query(client, factory_costs.top_prs, history.factory_uid, span(), 1)
    assert (top[0].additions, top[0].deletions, top[0].changed_files) == (600, 500, 7)
    assert top[0].merged_at == at(10, 4)


def _event(url: str, additions: int, deletions: int) -> dict[str, Any]:
    pull = {"html_url": url, "additions": additions, "deletions": deletions, "changed_files": 7}
    pull |= {"state": "closed", "merged_at": "2026-10-04T00:00:00Z"}
    return {"action": "closed", "pull_request": pull}


def test_run_counts_by_state_and_source(client: GatewayClient, history: History) -> None:
    by_state = query(client, run_counts.run_counts, history.factory_uid, span(), "state")
    assert [(g.key, g.run_count) for g in by_state.groups] == [
        ("SUCCEEDED", 2),
        ("FAILED", 1),
        ("QUEUED", 1),
    ]
    weekly = query(client, run_counts.run_counts, history.factory_uid, span("week"), "source")
    assert [(g.key, g.run_count_series) for g in weekly.groups] == [
        ("API", [2, 0, 0]),
        ("SCHEDULE", [0, 1, 0]),
        ("WEBHOOK", [0, 1, 0]),
    ]
    assert weekly.run_count == 4


def test_pull_requests_newest_first_in_pages_and_since(
    client: GatewayClient, history: History
) -> None:
    async def pages(services: Services) -> list[list[str]]:
        found, after = [], None
        async with services.database.read() as conn:
            while True:
                page = await pull_requests.list_pull_requests(
                    conn, history.factory_uid, updated_after=None, limit=2, after=after
                )
                found.append([row.url for row in page.items])
                if not page.more:
                    return found
                after = (page.items[-1].first_seen_at, page.items[-1].url)

    pr = history.pr
    assert client.run(pages) == [[pr["c"], pr["d"]], [pr["a"], pr["b"]], [pr["e"]]]

    async def since(services: Services) -> list[str]:
        async with services.database.read() as conn:
            page = await pull_requests.list_pull_requests(
                conn, history.factory_uid, updated_after=at(10, 4), limit=10, after=None
            )
        return [row.url for row in page.items]

    assert client.run(since) == [pr["c"], pr["a"]]  # a: refreshed on 10-06 by r3's artifact


def test_window_defaults_and_limits() -> None:
    now = at(11, 1)
    default = window(None, None, None, now)
    assert (default.start, default.end) == (at(10, 2), now)
    assert window(None, at(10, 1), None, now).start == at(9, 1)
    with pytest.raises(InvalidRequest, match="start_date"):
        window(at(10, 2), at(10, 2), None, now)
    year = window(at(1, 1).replace(year=2025), at(1, 1), "day", now)
    assert len(year.periods) == MAX_PERIODS
    with pytest.raises(InvalidRequest, match="group_by_period"):
        window(at(1, 1).replace(year=2025), at(1, 1, 1), "day", now)
    months = window(at(6, 1).replace(year=1996), now, "month", now).periods  # to 2026-10
    assert (len(months), months[0], months[-1]) == (MAX_PERIODS, "1996-06-01", "2026-10-01")
    with pytest.raises(InvalidRequest, match="group_by_period"):
        window(at(5, 31).replace(year=1996), now, "month", now)
    assert date.fromisoformat(span("week").periods[0]).weekday() == 0
