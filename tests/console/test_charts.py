"""The activity charts' geometry: moments counted into the window's buckets, stacked in the
kinds' order, the tallest bucket filling the height; what falls outside the window is left out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gateway.platform.agent_console.charts import HEIGHT, WINDOWS, stacked


def test_moments_are_bucketed_and_stacked() -> None:
    now = datetime(2026, 12, 2, 10, 7, tzinfo=UTC)
    hour = WINDOWS["hour"]
    moments = [
        (now, "matched"),
        (now - timedelta(minutes=1), "no_match"),
        (now - timedelta(minutes=1), "matched"),
        (now - timedelta(minutes=30), "matched"),
        (now - timedelta(hours=2), "matched"),  # outside the hour
    ]
    chart = stacked("Deliveries", hour, now, moments, ["matched", "no_match", "pending"])
    assert len(chart.starts) == 12 and chart.starts[-1] == datetime(2026, 12, 2, 10, 5, tzinfo=UTC)
    assert chart.kinds == ["matched", "no_match"]  # kinds with nothing are left out
    assert [(kind, total) for kind, _fill, _pattern, total in chart.legend] == [
        ("matched", 3),
        ("no_match", 1),
    ]
    assert chart.peak == 3
    last = [bar for bar in chart.bars if bar.x > chart.width - chart.width / 12]
    assert [(bar.kind, bar.count) for bar in last] == [("matched", 2), ("no_match", 1)]
    assert sum(bar.height for bar in last) == HEIGHT  # the peak fills the chart
    assert last[0].fill != last[1].fill and last[0].pattern != last[1].pattern
    assert chart.rows[-1][1] == {"matched": 2, "no_match": 1}
