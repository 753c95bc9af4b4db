"""The hot path's RESP client on Redis Cluster: one RespClient per master, chosen by hash slot.

Every command the ingress scripts send names keys of one shard's hash tag, so its slot is known
before it is sent (SubmitFrame computes it once per webhook). The slot map comes from
CLUSTER SLOTS, asked of any node known (the configured one first). Redis answers a command sent
to the wrong node with a redirection, before running it:

- `MOVED slot host:port`: the slot lives there now; the map is updated for that slot at once and
  refreshed in full in the background, and the command is sent again there;
- `ASK slot host:port`: the slot is being migrated and this key already moved; the command is
  sent there once, preceded by ASKING, and the map is left as it is.

A master that stops answering (killed, failing over) fails its callers at once (connection
lost or refused: the ingress answers 503 with Retry-After, see
transports/redis_stream/ingress.py) and makes the client refresh the map, at most every
REFRESH_EVERY_S while failures go on, so that requests go
to the promoted replica as soon as the cluster has failed over. CLUSTERDOWN and TRYAGAIN
(a slot without a master, or a multi-key command during a migration) are answered the same way.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse, urlunparse

from redis.crc import key_slot

from gateway.foundation.backends.resp_client import (
    NotSent,
    OnReply,
    RedisUnavailable,
    ReplyError,
    RespClient,
    encode_command,
    is_noscript,
)

log = logging.getLogger("gateway.ingress")

SLOTS = 16384
MAX_REDIRECTS = 5
REFRESH_EVERY_S = 0.25

Address = tuple[str, int]


def redirection(exc: ReplyError) -> tuple[str, Address] | None:
    """("MOVED" | "ASK", node address) when `exc` is a Cluster redirection, else None."""
    kind, _, rest = str(exc).partition(" ")
    if kind not in ("MOVED", "ASK"):
        return None
    _, _, address = rest.partition(" ")
    host, _, port = address.rpartition(":")
    return kind, (host, int(port))


def _needs_new_map(exc: RedisUnavailable) -> bool:
    """The failure may mean the cluster changed shape (a node gone, a slot without a master)."""
    if not isinstance(exc, ReplyError):
        return True  # connection refused, lost, or the reply overdue
    return str(exc).startswith(("CLUSTERDOWN", "TRYAGAIN", "MOVED"))


def followed_by_script(reply: Any) -> bool:
    """A redirection or NOSCRIPT reply, which `script` follows or repairs: the fast way's
    caller sends the command again through it. Any other error is a real failure."""
    return isinstance(reply, ReplyError) and (redirection(reply) is not None or is_noscript(reply))


class ClusterRespClient:
    routes_by_slot = True

    def __init__(self, url: str, *, timeout: float = 2.0, scripts: Sequence[str] = ()) -> None:
        parsed = urlparse(url)
        self._url = parsed
        self._seed: Address = (parsed.hostname or "127.0.0.1", parsed.port or 6379)
        self._timeout = timeout
        self._scripts = tuple(scripts)
        self._nodes: dict[Address, RespClient] = {}
        self._slots: list[Address | None] = [None] * SLOTS
        self._refreshing: asyncio.Task[None] | None = None
        self._refreshed_at = 0.0

    # -- the calls RedisBackend makes ------------------------------------------------------------

    def send_now(self, command: bytes, slot: int, on_reply: OnReply) -> bool:
        """Write `command` at once to the master of `slot` as the map knows it (see
        RespClient.send_now); False when the slot's master is not known yet. A redirection
        or NOSCRIPT reply is the caller's to retry through `script`, which follows it."""
        address = self._slots[slot]
        if address is None:
            return False

        def settled(reply: Any) -> None:
            if isinstance(reply, RedisUnavailable) and not followed_by_script(reply):
                self._failed(reply)
            on_reply(reply)

        return self._node(address).send_now(command, slot, settled)

    async def script(self, command: bytes, *, before: Sequence[bytes] = (), slot: int = 0) -> Any:
        """Run `command` (and `before`, see RespClient.script) on the master of `slot`,
        following redirections."""
        address = self._slots[slot] or await self._address_after_refresh(slot)
        asking = False
        for _ in range(MAX_REDIRECTS):
            try:
                return await self._node(address).script(command, before=before, asking=asking)
            except ReplyError as exc:
                moved = redirection(exc)
                if moved is None:
                    self._failed(exc)
                    raise
                kind, address = moved
                asking = kind == "ASK"
                if kind == "MOVED":
                    self._slots[slot] = address
                    self._refresh_soon()
            except RedisUnavailable as exc:
                self._failed(exc)
                raise
        raise ReplyError(f"more than {MAX_REDIRECTS} cluster redirections for slot {slot}")

    async def evalsha(
        self, sha: str, keys: Sequence[bytes | str], args: Sequence[bytes | str | int]
    ) -> Any:
        first = keys[0] if isinstance(keys[0], bytes) else keys[0].encode()
        command = encode_command(["EVALSHA", sha, len(keys), *keys, *args])
        return await self.script(command, slot=key_slot(first))

    async def close(self) -> None:
        if self._refreshing is not None:
            self._refreshing.cancel()
            await asyncio.gather(self._refreshing, return_exceptions=True)
        for node in self._nodes.values():
            await node.close()
        self._nodes.clear()

    # -- routing ---------------------------------------------------------------------------------

    def _node(self, address: Address) -> RespClient:
        node = self._nodes.get(address)
        if node is None:
            netloc = f"{address[0]}:{address[1]}"
            if self._url.password is not None:
                netloc = self._url.netloc.rpartition("@")[0] + "@" + netloc
            url = urlunparse((self._url.scheme, netloc, "", "", "", ""))
            node = self._nodes[address] = RespClient(
                url, timeout=self._timeout, scripts=self._scripts
            )
        return node

    async def _address_after_refresh(self, slot: int) -> Address:
        """The slot's master after a refresh of the map (one at a time, shared by callers)."""
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.create_task(self._refresh(), name="resp-cluster-refresh")
        await asyncio.shield(self._refreshing)
        address = self._slots[slot]
        if address is None:
            raise NotSent(f"no Redis Cluster node serves slot {slot}")
        return address

    def _failed(self, exc: RedisUnavailable) -> None:
        if _needs_new_map(exc):
            self._refresh_soon()

    def _refresh_soon(self) -> None:
        if self._refreshing is not None and not self._refreshing.done():
            return
        if time.monotonic() - self._refreshed_at < REFRESH_EVERY_S:
            return
        self._refreshing = asyncio.create_task(self._refresh(), name="resp-cluster-refresh")

    async def _refresh(self) -> None:
        """Reads the slot map from the first node that answers CLUSTER SLOTS."""
        self._refreshed_at = time.monotonic()
        candidates = [self._seed, *(a for a in self._nodes if a != self._seed)]
        for address in candidates:
            try:
                reply = await self._node(address).execute("CLUSTER", "SLOTS")
            except RedisUnavailable:
                continue
            self._slots = self._slot_map(reply, address[0])
            return
        log.warning("Redis Cluster: no node answered CLUSTER SLOTS (%d tried)", len(candidates))

    @staticmethod
    def _slot_map(reply: list[Any], asked_host: str) -> list[Address | None]:
        slots: list[Address | None] = [None] * SLOTS
        for start, end, master, *_replicas in reply:
            # an empty host means "the address you reached me at"
            host = master[0].decode() if master[0] else asked_host
            address = (host, int(master[1]))
            for slot in range(int(start), int(end) + 1):
                slots[slot] = address
        return slots
