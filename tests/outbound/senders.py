"""Senders for the dispatcher's tests: each answers what its script says, and records when."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.outbound import Delivered, OutboundMessage, Outcome, RetrySchedule

QUICK = RetrySchedule(first_s=0.05, factor=2.0, max_attempts=4, jitter=0.0)


@dataclass
class ScriptedSender:
    kind: str
    script: list[Outcome] = field(default_factory=list)  # then Delivered
    schedule: RetrySchedule = QUICK
    delay: Callable[[OutboundMessage], float] = lambda message: 0.0
    sent: list[tuple[str, float]] = field(default_factory=list)  # (message id, monotonic)
    settlements: list[tuple[str, Outcome]] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0

    async def send(self, message: OutboundMessage) -> Outcome:
        self.sent.append((message.id, time.monotonic()))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay(message))
        finally:
            self.in_flight -= 1
        if self.script:
            return self.script.pop(0)
        return Delivered(message_id=f"m-{message.id}", url=f"https://example.com/{message.id}")

    async def settled(
        self, conn: AsyncConnection, message: OutboundMessage, outcome: Outcome
    ) -> None:
        self.settlements.append((message.id, outcome))
