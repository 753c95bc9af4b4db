"""What a run an automation starts takes from it (name, prompt, agent, runs' configuration),
cached between batches by the automation's updated_at, whatever source started it.

Prompts run to 100,000 characters: only those of automations that start runs are kept, up to
MAX_CACHED_PROMPT_CHARS in all, least recently used first out.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.bulk import json_value
from gateway.webhook_gateway.automations.source_rows import STAMP, chunks, stamp_micros

MAX_CACHED_PROMPT_CHARS = 8_000_000


@dataclass(frozen=True, slots=True)
class Automation:
    """What a run it starts takes from it: `agent_uid` (None: the factory's foreman) and
    `agent_config`, its runs' configuration already encoded for the driver (None: none), read
    once when the automation is (re)loaded, not per delivery."""

    uid: str
    name: str
    prompt: str
    stamp: int
    agent_uid: str | None = None
    agent_config: str | None = None
    worker_host: str | None = None  # the self-hosted worker its runs are pinned to


class Prompts:
    def __init__(self) -> None:
        self._prompts: OrderedDict[str, Automation] = OrderedDict()
        self._chars = 0

    async def automations(
        self, conn: AsyncConnection, wanted: dict[str, int]
    ) -> dict[str, Automation]:
        """Each automation uid in `wanted` (uid -> updated_at stamp); automations deleted
        meanwhile are absent."""
        found: dict[str, Automation] = {}
        missing: list[str] = []
        for uid, stamp in wanted.items():
            cached = self._prompts.get(uid)
            if cached is not None and cached.stamp == stamp:
                self._prompts.move_to_end(uid)
                found[uid] = cached
            else:
                missing.append(uid)
        for automation in await _automations(conn, missing):
            found[automation.uid] = automation
            self._keep(automation)
        return found

    def _keep(self, automation: Automation) -> None:
        old = self._prompts.pop(automation.uid, None)
        if old is not None:
            self._chars -= len(old.prompt)
        self._prompts[automation.uid] = automation
        self._chars += len(automation.prompt)
        while self._chars > MAX_CACHED_PROMPT_CHARS and len(self._prompts) > 1:
            _, evicted = self._prompts.popitem(last=False)
            self._chars -= len(evicted.prompt)


def _pinned_worker(config: dict[str, Any] | None) -> str | None:
    """The worker an automation's runs are pinned to: its configuration's `worker_host`, unless
    empty or `warp` (the team's pool); the platform's `worker_pinning.pinned_host` rule, which
    the product boundary keeps this side from importing."""
    host = (config or {}).get("worker_host")
    if not isinstance(host, str) or host.strip() in ("", "warp"):
        return None
    return host.strip()


async def _automations(conn: AsyncConnection, uids: Sequence[str]) -> list[Automation]:
    a = t.automations
    found = []
    for chunk in chunks(uids):
        query = select(a.c.uid, a.c.name, a.c.prompt, STAMP, a.c.agent_uid, a.c.agent_config).where(
            a.c.uid.in_(chunk)
        )
        for row in await conn.execute(query):
            found.append(
                Automation(
                    row.uid,
                    row.name,
                    row.prompt,
                    stamp_micros(row.stamp),
                    row.agent_uid,
                    json_value(row.agent_config),
                    _pinned_worker(row.agent_config),
                )
            )
    return found
