"""What each server recorded: accepted deliveries in Redis streams or SQL, runs created, drain."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import redis

from gateway.foundation.backends.redis_keys import KeySpace
from gateway.webhook_gateway.transports.outbox.file import SUFFIX as OUTBOX_SUFFIX

PAGE = 100  # entries per XRANGE: a page of 200 KB bodies is ~20 MB


def stream_accepted_ids(client: redis.Redis, prefix: str) -> set[str]:
    """Delivery ids of the `Accepted` entries in the shard streams, paged from the client.

    Not a Lua scan: that copies every body inside Redis in one script, which with a backlog of
    200 KB bodies runs past Redis's busy threshold and blocks everyone else.
    """
    ids: set[str] = set()
    for stream in KeySpace(prefix).streams():
        start = "-"
        while page := cast(Any, client.xrange(stream, start, "+", count=PAGE)):
            for _entry_id, fields in page:
                if fields.get(b"l") == b"Accepted":
                    ids.add(fields[b"d"].decode())
            start = "(" + page[-1][0].decode()
    return ids


def gateway_stream_accepted(client: redis.Redis, prefix: str) -> int:
    return len(stream_accepted_ids(client, prefix))


def accepted_anywhere(client: redis.Redis | None, prefix: str, database: Path) -> int:
    """Accepted deliveries still waiting (stream, or pending in the log) plus those evaluated.

    The stream is read first: an entry leaves it only after its SQL commit, so each accepted
    delivery is seen at least once; the union of ids removes the ones seen twice.
    """
    ids = stream_accepted_ids(client, prefix) if client is not None else set()
    ids.update(_outbox_accepted_ids(database))  # read before the log, like the stream
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as conn:
        query = "SELECT delivery_id FROM deliveries WHERE label = 'Accepted'"
        ids.update(row[0] for row in conn.execute(query))
    return len(ids)


def _outbox_accepted_ids(database: Path) -> set[str]:
    """Accepted deliveries in the embedded default's outbox beside the store (none without)."""
    path = Path(str(database) + OUTBOX_SUFFIX)
    if not path.exists():
        return set()
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as conn:
        query = "SELECT delivery_id FROM outbox WHERE label = 'Accepted'"
        return {row[0] for row in conn.execute(query)}


def naive_stream_entries(client: redis.Redis) -> int:
    return int(client.xlen("naive:log"))


@dataclass(frozen=True, slots=True)
class StoreCounts:
    accepted: int  # evaluated
    other_records: int
    runs: int
    pending: int  # embedded: accepted, in the outbox or the log, waiting for the evaluator
    # deliveries that continued a work item's run instead of starting one (the provider rows'
    # GitHub deliveries name 64 issues: the first of each starts a run, the rest follow it up)
    follow_ups: int = 0


def store_counts(database: Path) -> StoreCounts:
    """The counts of one moment: every query reads the same snapshot (one read transaction), so
    a batch the evaluator commits between two of them is counted in all or none (it was not:
    runs counted after the deliveries once read 26 runs more than deliveries)."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as conn:
        outbox = Path(str(database) + OUTBOX_SUFFIX)
        if outbox.exists():  # accepted, not moved into the log yet (ATTACH: before BEGIN)
            conn.execute("ATTACH DATABASE ? AS outbox_file", (f"file:{outbox}?mode=ro",))
        conn.execute("BEGIN")
        by_label = dict(
            conn.execute(
                "SELECT label, count(*) FROM deliveries WHERE evaluation IS NULL "
                "OR evaluation = 'evaluated' GROUP BY label"
            )
        )
        runs = conn.execute("SELECT count(*) FROM runs WHERE delivery_id IS NOT NULL").fetchone()[0]
        follow_ups = conn.execute("SELECT count(*) FROM work_item_follow_ups").fetchone()[0]
        pending = conn.execute(
            "SELECT count(*) FROM deliveries WHERE evaluation = 'pending'"
        ).fetchone()[0]
        if outbox.exists():
            pending += conn.execute(
                "SELECT count(*) FROM outbox_file.outbox o WHERE label = 'Accepted' AND NOT EXISTS "
                "(SELECT 1 FROM deliveries d WHERE d.delivery_id = o.delivery_id)"
            ).fetchone()[0]
    accepted = by_label.pop("Accepted", 0)
    return StoreCounts(accepted, sum(by_label.values()), runs, pending, follow_ups)


def doubled_deliveries(database: Path) -> int:
    """Deliveries with more than one run (every benchmark payload matches one automation)."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as conn:
        query = (
            "SELECT count(*) FROM (SELECT delivery_id FROM runs WHERE delivery_id IS NOT NULL "
            "GROUP BY delivery_id HAVING count(*) > 1)"
        )
        return int(conn.execute(query).fetchone()[0])


@dataclass(frozen=True, slots=True)
class Drain:
    backlog_at_end: int
    drain_s: float | None  # None: not drained within the bounded wait
    evaluated_per_s: float
    runs_per_s: float
    # runs started or followed up: what a provider delivery about an issue that has a run
    # already turns into (the grid's GitHub deliveries name 64 issues)
    work_per_s: float
    final: StoreCounts


def wait_for_drain(
    database: Path, expected: int, load_started: float, load_s: float, max_wait_s: float
) -> Drain:
    """Poll the store until `expected` accepted deliveries are recorded (bounded)."""
    at_end = store_counts(database)
    ended = time.monotonic()
    counts = at_end
    while counts.accepted < expected and time.monotonic() - ended < max_wait_s:
        time.sleep(0.5)
        counts = store_counts(database)
    drained = counts.accepted >= expected
    finished = time.monotonic()
    busy = max(load_s, finished - load_started)
    return Drain(
        backlog_at_end=max(0, expected - at_end.accepted),
        drain_s=(finished - ended) if drained else None,
        evaluated_per_s=counts.accepted / busy if busy else 0.0,
        runs_per_s=counts.runs / busy if busy else 0.0,
        work_per_s=(counts.runs + counts.follow_ups) / busy if busy else 0.0,
        final=counts,
    )
