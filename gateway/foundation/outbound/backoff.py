"""When a message is tried again: each kind has its own `RetrySchedule`."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class RetrySchedule:
    """Attempt n (1-based) failed: the next one waits `first_s * factor**(n-1)`, at most
    `max_delay_s`, spread by +-`jitter` (a fraction) so that messages that failed together do
    not come back together. A wait the other side asked for (`RetryLater.after`, Retry-After)
    is honoured as it is, plus a little. The message fails for good after `max_attempts`
    attempts, or when the next one would come later than `max_age_s` after it was enqueued."""

    first_s: float = 5.0
    factor: float = 2.0
    max_delay_s: float = 900.0
    max_attempts: int = 10
    max_age_s: float = 86_400.0
    jitter: float = 0.2

    def delay(self, attempts: int, after: float | None = None) -> float:
        """Seconds before the next attempt, `attempts` having been made."""
        if after is not None:
            return after + random.uniform(0.0, min(1.0, after * self.jitter))
        base = min(self.max_delay_s, self.first_s * self.factor ** max(0, attempts - 1))
        return max(0.0, base * (1.0 + random.uniform(-self.jitter, self.jitter)))

    def next_attempt(
        self, attempts: int, created_at: datetime, now: datetime, after: float | None = None
    ) -> datetime | None:
        """When to try again, or None: the schedule is exhausted."""
        if attempts >= self.max_attempts:
            return None
        at = now + timedelta(seconds=self.delay(attempts, after))
        if at > created_at + timedelta(seconds=self.max_age_s):
            return None
        return at
