"""What the evaluator reads from every transport: entries, the claim its batch transaction runs,
and the acknowledgement after the commit (`gateway.webhook_gateway.evaluator.delivery_consumer`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple, Protocol

from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.backends.contract import DeliveryRecord
from gateway.webhook_gateway.deliveries.trace import TraceWrites
from gateway.webhook_gateway.ingress.body import MAX_BODY


class Entry(NamedTuple):
    token: Any  # where the entry lives in its source (stream + id, or nothing)
    record: DeliveryRecord


def rows_per_read(batch: int, read_bytes: int, records: Sequence[DeliveryRecord]) -> int:
    """How many entries a source asks for next, after reading `records`: its `batch`, fewer
    while bodies are large, so that one read holds about `read_bytes` of them at most."""
    largest = max((record.size for record in records), default=0)
    return max(1, min(batch, read_bytes // max(largest, 1)))


def first_rows_per_read(batch: int, read_bytes: int) -> int:
    """How many entries a source asks for before it has read any (after a start, a backlog may
    be all bodies of the largest size ingress takes): `read_bytes` of those, at most `batch`.
    The read after it asks for what that one's sizes allow (`rows_per_read`)."""
    return max(1, min(batch, read_bytes // MAX_BODY))


# called inside the batch transaction: marks the entries evaluated in the delivery log; the ids
# of the deliveries this transaction evaluates (the others were evaluated before)
Claim = Callable[[AsyncConnection], Awaitable[set[str]]]


class Source(Protocol):
    async def read(self) -> list[Entry]:
        """The next entries; waits a little when there are none."""
        ...

    def claim(
        self, entries: Sequence[Entry], dialect: Dialect, traces: TraceWrites | None = None
    ) -> Claim:
        """The batch's claim, prepared before its transaction (whatever can be: the write lock
        is held only for the statements). A source that inserts the log rows puts the outcome
        traces into them (`traces.take`); the others are written by the batch."""
        ...

    async def acknowledge(self, entries: Sequence[Entry]) -> None:
        """After the commit: the entries are done."""
        ...

    async def retry_later(self, entries: Sequence[Entry]) -> None:
        """A batch failed: make sure these entries are read again."""
        ...

    def stop_waiting(self) -> None:
        """The consumer is stopping: end an idle wait now, and wait no more."""
        ...
