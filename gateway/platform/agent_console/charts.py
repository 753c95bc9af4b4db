"""Stacked bar charts as plain geometry for an SVG template: counts per time bucket and kind
(a delivery's outcome, a run's state) in, bars and a legend out. No JavaScript, no library:
the console's template draws the rectangles, and a table beside each chart says the same in
text (a chart is never the only way to read a number)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

WIDTH, HEIGHT, GAP = 600, 160, 2
# fill and a pattern per kind, so two kinds differ by more than colour (the legend names both)
PALETTE = (
    ("#1f6feb", "solid"),
    ("#b35900", "stripes"),
    ("#146c2e", "dots"),
    ("#a3190f", "cross"),
    ("#6e40c9", "solid"),
    ("#545b64", "stripes"),
    ("#0b7285", "dots"),
    ("#7a4b00", "cross"),
    ("#8f1d6b", "solid"),
)


@dataclass(frozen=True, slots=True)
class Window:
    name: str
    span: timedelta
    bucket: timedelta

    def starts(self, now: datetime) -> list[datetime]:
        """The buckets' starts, oldest first, the last one holding `now`."""
        count = int(self.span / self.bucket)
        epoch = datetime(2000, 1, 1, tzinfo=now.tzinfo)
        last = epoch + ((now - epoch) // self.bucket) * self.bucket
        return [last - self.bucket * (count - 1 - i) for i in range(count)]


WINDOWS = {
    "hour": Window("hour", timedelta(hours=1), timedelta(minutes=5)),
    "day": Window("day", timedelta(days=1), timedelta(hours=1)),
}


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    kind: str
    count: int
    fill: str
    pattern: str
    label: str  # for the bar's <title>: "10:05 · SUCCEEDED: 3"


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    bars: list[Bar]
    legend: list[tuple[str, str, str, int]]  # kind, fill, pattern, total
    starts: list[datetime]
    rows: list[tuple[datetime, dict[str, int]]]  # the table beside the chart
    kinds: list[str]
    peak: int
    width: int = WIDTH
    height: int = HEIGHT


def stacked(
    title: str, window: Window, now: datetime, moments: list[tuple[datetime, str]], kinds: list[str]
) -> Chart:
    """`moments` (when, kind) counted into the window's buckets, stacked in `kinds`' order
    (kinds seen but not listed come after)."""
    starts = window.starts(now)
    counts: list[dict[str, int]] = [{} for _ in starts]
    first = starts[0]
    for when, kind in moments:
        index = int((when - first) // window.bucket)
        if 0 <= index < len(starts):
            counts[index][kind] = counts[index].get(kind, 0) + 1
    seen = [kind for kind in kinds] + sorted({k for c in counts for k in c} - set(kinds))
    shown = [kind for kind in seen if any(c.get(kind) for c in counts)]
    styles = {kind: PALETTE[i % len(PALETTE)] for i, kind in enumerate(seen)}
    peak = max((sum(c.values()) for c in counts), default=0)
    step = WIDTH / len(starts)
    bars: list[Bar] = []
    for i, (start, bucket) in enumerate(zip(starts, counts, strict=True)):
        base = float(HEIGHT)
        for kind in shown:
            count = bucket.get(kind, 0)
            if not count:
                continue
            height = HEIGHT * count / peak
            base -= height
            fill, pattern = styles[kind]
            label = f"{start:%H:%M} · {kind}: {count}"
            x, width = i * step + GAP, step - 2 * GAP
            bars.append(Bar(x, base, width, height, kind, count, fill, pattern, label))
    legend = [(k, *styles[k], sum(c.get(k, 0) for c in counts)) for k in shown]
    rows = [(start, bucket) for start, bucket in zip(starts, counts, strict=True)]
    return Chart(title, bars, legend, starts, rows, shown, peak)
