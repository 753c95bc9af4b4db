"""Accepted deliveries -> factory runs, one per (delivery, matching automation)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.services import Services


@dataclass(frozen=True, slots=True)
class AcceptedDelivery:
    delivery_id: str
    webhook_uid: str
    received_at: datetime
    payload: bytes  # the raw body, valid JSON (checked at ingress)


@dataclass(frozen=True, slots=True)
class RunRef:
    automation_uid: str
    run_id: str


class RunStarter:
    """Matches a delivery against the webhook's enabled automations and starts their runs.

    `start_runs` runs inside the caller's transaction and is idempotent on
    (delivery_id, automation_uid): calling it again for the same delivery starts nothing new and
    returns the same refs.
    """

    def __init__(self, services: Services) -> None:
        self.services = services

    async def start_runs(self, conn: AsyncConnection, delivery: AcceptedDelivery) -> list[RunRef]:
        raise NotImplementedError("being implemented")
