"""The embedded outbox's appends: CPU a delivery of the serving process's writer, by index.

    .venv/bin/python -m benchmarks.outbox_append [--deliveries 60000] [--webhooks 10000]
        [--commit 4,16] [--waiting 3000] [--rounds 2]

The real `OutboxAppender` appends `--deliveries` accepted 1 KB deliveries (rows as `row_of`
makes them, each to one of `--webhooks` webhooks at random, as the grid spreads them) in commits
of `--commit` rows (the delivery writer commits what one event-loop turn gathered: a few rows
below saturation, more under load), and deletes the oldest rows 128 at a time once more than
`--waiting` are held, as ingress prunes what the evaluator moved. Reported: the appender's CPU a
delivery (appends, deletes and the WAL checkpoints SQLite runs in the same thread; the rows are
built before the clock starts) for each layout of the outbox's one index, rounds alternated:

- `shipped`: the file as `create_schema` makes it (a unique index on delivery_id: time-ordered
  ids land on its last page);
- `by webhook`: the index it had before 2026-12-03, (webhook_uid, delivery_id), which put each
  row of a commit on a page of its own;
- `none`: no index at all (the floor).

Then, in the shipped layout, each `--synchronous` setting (GATEWAY_SQLITE_SYNCHRONOUS; `full`,
the default, syncs the log to disk at each commit): the appender's CPU and its wall time a
delivery (the wall time is what the event loop waits while a batch of small payloads commits on
it), rounds alternated.

Then, at `--waiting` and at 100,000 rows (GATEWAY_MAX_BACKLOG's default) held in the shipped
layout, the delivery log API's two reads: one delivery (`Outbox.find`, indexed) and one webhook's
waiting deliveries (`Outbox.of_webhook`, a scan), each the median of 5.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.kernel import ids
from gateway.webhook_gateway.transports.outbox import file as outbox

LAYOUTS = {
    "shipped": (),
    "by webhook": (
        "DROP INDEX outbox_delivery",
        "CREATE UNIQUE INDEX outbox_webhook ON outbox (webhook_uid, delivery_id)",
    ),
    "none": ("DROP INDEX outbox_delivery",),
}
HEADERS = b"content-type: application/json\r\nwebhook-id: msg_1\r\n"


def rows(count: int, webhooks: list[str]) -> list[tuple[Any, ...]]:
    payload = b'{"pad":"' + b"x" * 1000 + b'"}'
    now = datetime.now(UTC)
    return [
        outbox.row_of(
            DeliveryRecord(
                ids.new_id("dlv"),
                random.choice(webhooks),
                now,
                len(payload),
                Label.ACCEPTED,
                ids.new_id("msg"),
                payload=payload,
                headers=HEADERS,
            )
        )
        for _ in range(count)
    ]


def appender(
    directory: Path, layout: str, synchronous: str = "full"
) -> tuple[outbox.OutboxAppender, str]:
    """A new outbox file in `layout`, and its path."""
    path = str(directory / f"{layout.replace(' ', '-')}-{ids.new_id('o')}{outbox.SUFFIX}")
    made = outbox.OutboxAppender(path, synchronous)
    for statement in LAYOUTS[layout]:
        made._conn.execute(statement)
    return made, path


def append_costs(
    directory: Path,
    layout: str,
    batches: list[list[tuple[Any, ...]]],
    waiting: int,
    synchronous: str = "full",
) -> tuple[float, float]:
    """The appender's CPU and wall time (µs) a delivery: every batch appended, pruned to
    `waiting` rows."""
    writer, _path = appender(directory, layout, synchronous)
    held = 0
    started = time.perf_counter()
    start = time.thread_time()
    for batch in batches:
        writer.append(batch)
        held += len(batch)
        while held > waiting + outbox.PRUNE_SLICE:
            oldest = writer._conn.execute(
                "SELECT seq FROM outbox ORDER BY seq LIMIT ?", (outbox.PRUNE_SLICE,)
            ).fetchall()
            writer.delete([seq for (seq,) in oldest])
            held -= len(oldest)
    spent, waited = time.thread_time() - start, time.perf_counter() - started
    writer.close()
    deliveries = sum(len(b) for b in batches)
    return spent / deliveries * 1e6, waited / deliveries * 1e6


async def read_times(directory: Path, held: int, webhooks: list[str]) -> dict[str, float]:
    """The two API reads (ms, median of 5) with `held` rows in the shipped outbox."""
    writer, path = appender(directory, "shipped")
    made = rows(held, webhooks)
    for i in range(0, held, outbox.ROWS_PER_INSERT):
        writer.append(made[i : i + outbox.ROWS_PER_INSERT])
    writer.close()
    store = directory / f"store-{ids.new_id('s')}.db"  # attached by the reader: none moved yet
    with sqlite3.connect(store) as conn:
        conn.execute("CREATE TABLE deliveries (delivery_id TEXT PRIMARY KEY)")
    reader = outbox.Outbox(path, str(store))
    finds, scans = [], []
    try:
        for i in range(5):
            row = made[(i * 7919) % held]
            start = time.perf_counter()
            assert await reader.find(row[1], row[0]) is not None
            finds.append(time.perf_counter() - start)
            start = time.perf_counter()
            assert await reader.of_webhook(row[1])
            scans.append(time.perf_counter() - start)
    finally:
        await reader.close()
    return {
        "find ms": statistics.median(finds) * 1e3,
        "of_webhook ms": statistics.median(scans) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=60_000)
    parser.add_argument("--webhooks", type=int, default=10_000)
    parser.add_argument("--commit", default="4,16", help="rows a commit, comma-separated")
    parser.add_argument("--waiting", type=int, default=3_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--synchronous", default="full,normal", help="comma-separated")
    args = parser.parse_args()
    webhooks = [ids.new_id("whk") for _ in range(args.webhooks)]
    with tempfile.TemporaryDirectory() as temp:
        directory = Path(temp)
        for size in (int(s) for s in args.commit.split(",")):
            made = rows(args.deliveries, webhooks)
            batches = [made[i : i + size] for i in range(0, len(made), size)]
            costs: dict[str, list[float]] = {layout: [] for layout in LAYOUTS}
            for round_ in range(args.rounds):
                order = list(LAYOUTS) if round_ % 2 == 0 else list(reversed(LAYOUTS))
                for layout in order:
                    cost, _wall = append_costs(directory, layout, batches, args.waiting)
                    costs[layout].append(cost)
            shown = ", ".join(
                f"{layout} {' / '.join(f'{c:.1f}' for c in found)}"
                for layout, found in costs.items()
            )
            print(f"{size} rows a commit: µs a delivery (rounds): {shown}")
            settings = args.synchronous.split(",")
            found: dict[str, list[tuple[float, float]]] = {setting: [] for setting in settings}
            for round_ in range(args.rounds):
                for setting in settings if round_ % 2 == 0 else list(reversed(settings)):
                    cost = append_costs(directory, "shipped", batches, args.waiting, setting)
                    found[setting].append(cost)
            shown = ", ".join(
                f"{setting} {' / '.join(f'{cpu:.1f} CPU, {wall:.1f} wall' for cpu, wall in c)}"
                for setting, c in found.items()
            )
            print(f"{size} rows a commit, shipped, by synchronous (rounds): {shown}")
        for held in (args.waiting, 100_000):
            times = asyncio.run(read_times(directory, held, webhooks))
            shown = ", ".join(f"{name} {value:.2f}" for name, value in times.items())
            print(f"{held:,} rows held: {shown}")


if __name__ == "__main__":
    main()
