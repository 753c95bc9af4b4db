"""One info line per rejected delivery, with its reason code; never a flood.

Per webhook and process, at most LIMIT lines per WINDOW_S (the same budget as the records the
backends store, REJECT_LOG_LIMIT per minute); rejections past it are counted, and the next line
logged for that webhook says how many were left out."""

from __future__ import annotations

import logging
import time

from gateway.foundation.backends.contract import RATE_WINDOW_MS, REJECT_LOG_LIMIT
from gateway.kernel.rejections import Reason

log = logging.getLogger("gateway.ingress")

LIMIT = REJECT_LOG_LIMIT
WINDOW_S = RATE_WINDOW_MS / 1000
MAX_WEBHOOKS = 10_000  # webhooks tracked; past it the budgets start over


class _Budget:
    __slots__ = ("logged", "started", "suppressed")

    def __init__(self, now: float) -> None:
        self.started = now
        self.logged = 0
        self.suppressed = 0


class RejectionLog:
    def __init__(self, limit: int = LIMIT, window_s: float = WINDOW_S) -> None:
        self.limit = limit
        self.window_s = window_s
        self._budgets: dict[str, _Budget] = {}

    def rejected(self, webhook_uid: str, delivery_id: str, reason: Reason) -> None:
        now = time.monotonic()
        budget = self._budgets.get(webhook_uid)
        if budget is None:
            if len(self._budgets) >= MAX_WEBHOOKS:
                self._budgets.clear()
            budget = self._budgets[webhook_uid] = _Budget(now)
        elif now - budget.started >= self.window_s:
            budget.started, budget.logged = now, 0
        if budget.logged >= self.limit:
            budget.suppressed += 1
            return
        budget.logged += 1
        suppressed, budget.suppressed = budget.suppressed, 0
        log.info(
            "ingress: delivery %s to webhook %s rejected: %s%s",
            delivery_id,
            webhook_uid,
            reason.value,
            f" ({suppressed} earlier rejections of this webhook not logged)" if suppressed else "",
        )
