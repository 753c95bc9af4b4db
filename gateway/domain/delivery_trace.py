"""The outcome trace of an accepted delivery: what the evaluator decided, and why.

For each enabled automation listening to the webhook: matched, or the first condition of its
payload filter the delivery failed (`filters.explain`, the same semantics as the compiled
matcher). The matcher answers first; explanations are made only for the automations it did not
return. The trace is stored with the delivery in the evaluator's batch transaction, beside the
runs it starts, so what the log says is what happened.

Outcomes: `matched` (runs started), `no_match`, `no_automations`, `webhook_not_live` (disabled
or deleted before it was evaluated) and `no_foreman` (matched, but the factory has no foreman
agent to run as: no run could start, and the evaluation is `failed`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection

from filters import Filter, explain
from gateway.backends.delivery_rows import EVALUATED

FAILED: Final = "failed"
MATCHED, NO_MATCH, NO_AUTOMATIONS = "matched", "no_match", "no_automations"
WEBHOOK_NOT_LIVE, NO_FOREMAN = "webhook_not_live", "no_foreman"

Key = tuple[str, int]  # (automation uid, trigger position)


@dataclass(frozen=True, slots=True)
class Trace:
    outcome: str
    automations: list[dict[str, Any]]

    @property
    def evaluation(self) -> str:
        return FAILED if self.outcome == NO_FOREMAN else EVALUATED

    def encode(self) -> bytes:
        return orjson.dumps({"outcome": self.outcome, "automations": self.automations})


def considered(
    filters: Sequence[tuple[Key, Filter | None]], matched: Collection[Key], payload: Any
) -> list[dict[str, Any]]:
    """One entry per automation (in the order of `filters`): matched if any of its triggers
    on this webhook matched, else the first mismatch of its first trigger."""
    entries: dict[str, dict[str, Any]] = {}
    for key, tree in filters:
        uid = key[0]
        entry = entries.get(uid)
        if entry is not None and (entry["matched"] or key not in matched):
            continue
        if key in matched:
            entries[uid] = {"automation_uid": uid, "matched": True, "mismatch": None}
        else:
            found = explain(tree, payload)
            entries[uid] = {
                "automation_uid": uid,
                "matched": False,
                "mismatch": str(found) if found is not None else None,
                "path": found.path if found is not None else None,
            }
    return list(entries.values())


def trace_of(
    live: bool,
    filters: Sequence[tuple[Key, Filter | None]],
    matched: Collection[Key],
    payload: Any,
    has_foreman: bool,
) -> Trace:
    if not live:
        return Trace(WEBHOOK_NOT_LIVE, [])
    if not filters:
        return Trace(NO_AUTOMATIONS, [])
    entries = considered(filters, matched, payload)
    if not matched:
        return Trace(NO_MATCH, entries)
    return Trace(MATCHED if has_foreman else NO_FOREMAN, entries)


def decode(stored: bytes | None) -> dict[str, Any] | None:
    return orjson.loads(stored) if stored else None


class TraceWrites:
    """The traces of a batch, encoded before its transaction; written for the deliveries the
    transaction claimed, as one executemany."""

    def __init__(self, traces: dict[str, Trace]) -> None:
        self._rows = [(d, trace.encode(), trace.evaluation) for d, trace in traces.items()]

    def __len__(self) -> int:
        return len(self._rows)

    async def write(self, conn: AsyncConnection, claimed: Collection[str]) -> None:
        rows = [(trace, evaluation, d) for d, trace, evaluation in self._rows if d in claimed]
        if not rows:
            return
        await conn.exec_driver_sql(_update_sql(conn.dialect.paramstyle), rows)


def _update_sql(paramstyle: str) -> str:
    markers = ("$1", "$2", "$3") if paramstyle == "numeric_dollar" else ("?",) * 3
    return (
        f"UPDATE deliveries SET trace = {markers[0]}, evaluation = {markers[1]} "
        f"WHERE delivery_id = {markers[2]}"
    )
