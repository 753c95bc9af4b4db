"""Deliveries that reach the Redis backend in the same event-loop turn leave as one SUBMIT.

Under load, many requests finish reading their bodies in one turn of the loop. Sent one EVALSHA
each, every delivery pays Redis a command parse, a script call and a reply of its own; grouped,
they share them (and the gateway's write and read). Nothing waits for company: the first
delivery of a turn schedules the group's sending for the end of that turn (`call_soon`, no
timer), so a lone delivery leaves as soon as it would have alone.

On Redis Cluster a script may only touch keys of one hash slot: one group per slot. The script
runs each delivery's checks and writes in order with the outcome it would have had alone
(lua_scripts.SUBMIT_SCRIPT); a Redis error of one delivery is its own ('ERR'), and a failed
call (connection lost, script refused under maxmemory) fails every delivery of the group with
the same error, as it would have failed each alone.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from gateway.foundation.backends import resp_client
from gateway.foundation.backends.resp_client import (
    RedisUnavailable,
    ReplyError,
    ReplyLost,
    ScriptClient,
)
from gateway.foundation.backends.resp_cluster import followed_by_script

# A script blocks Redis while it runs, and replies to none of its deliveries before it has
# read and run them all: a group leaves as soon as it holds MAX_GROUP deliveries or
# MAX_GROUP_BYTES of them (Redis reads 16 KB at a time; a larger group made the first of its
# deliveries wait for the reads of the last)
MAX_GROUP = 64
MAX_GROUP_BYTES = 16 * 1024

# One waiting delivery: its keys and arguments, encoded, and the future of its reply
Member = tuple[bytes, bytes, "asyncio.Future[Any]"]


class SubmitGroups:
    def __init__(self, client: ScriptClient, sha: str, *, by_slot: bool) -> None:
        self._client = client
        self._evalsha = resp_client.bulk("EVALSHA") + resp_client.bulk(sha)
        self._by_slot = by_slot
        self._waiting: dict[int, list[Member]] = {}
        self._bytes: dict[int, int] = {}  # each waiting group's size, encoded
        self._loop: asyncio.AbstractEventLoop | None = None

    def submit(self, slot: int, keys: bytes, args: bytes) -> asyncio.Future[Any]:
        """Queue one delivery's encoded keys (8) and arguments (13); the future of its reply."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        reply = loop.create_future()
        if not self._by_slot:
            slot = 0  # a single Redis runs a script over keys of any slot
        waiting = self._waiting
        if not waiting:
            loop.call_soon(self._send_all)
        group = waiting.get(slot)
        if group is None:
            group = waiting[slot] = []
            self._bytes[slot] = 0
        group.append((keys, args, reply))
        size = self._bytes[slot] = self._bytes[slot] + len(keys) + len(args)
        if len(group) >= MAX_GROUP or size >= MAX_GROUP_BYTES:
            del waiting[slot]
            self._send(slot, group)
        return reply

    def _send_all(self) -> None:
        waiting, self._waiting = self._waiting, {}
        for slot, group in waiting.items():
            self._send(slot, group)

    def _send(self, slot: int, group: list[Member]) -> None:
        count = len(group)
        command = b"".join(
            [
                resp_client.array_head(3 + 21 * count),
                self._evalsha,
                resp_client.bulk(8 * count),
                *[keys for keys, _, _ in group],
                *[args for _, args, _ in group],
            ]
        )
        # the fast way: written now, the reply handed over as it is read (no extra loop turn
        # on either side); without a live connection, the slow way connects first
        try:
            if self._client.send_now(command, slot, partial(self._settle, group, command, slot)):
                return
        except RedisUnavailable:  # the connection closed under us: the slow way reconnects
            pass
        self._send_slowly(group, command, slot)

    def _send_slowly(self, group: list[Member], command: bytes, slot: int) -> None:
        """Through `script`: connects, follows Cluster redirections, reloads lost scripts."""
        sent = asyncio.ensure_future(self._client.script(command, slot=slot))
        sent.add_done_callback(partial(_settle_task, group))

    def _settle(self, group: list[Member], command: bytes, slot: int, reply: Any) -> None:
        """The fast way's reply, from inside the connection's read: must not raise."""
        if followed_by_script(reply):
            self._send_slowly(group, command, slot)  # Redis lost its scripts, or a slot moved
            return
        _distribute(group, reply)


def _settle_task(group: list[Member], sent: asyncio.Future[Any]) -> None:
    if sent.cancelled():
        _distribute(group, ReplyLost("the group's call was cancelled"))
    else:
        _distribute(group, sent.exception() or sent.result())


def _distribute(group: list[Member], reply: Any) -> None:
    """Each member its own reply; an error of the whole call to every member alike."""
    if isinstance(reply, BaseException):
        _fail(group, reply)
        return
    if not isinstance(reply, list) or len(reply) != len(group):
        _fail(group, ReplyError(f"SUBMIT answered {len(group)} deliveries with {reply!r:.80}"))
        return
    for (_, _, future), one in zip(group, reply, strict=True):
        if future.done():
            continue
        error = error_of(one)
        if error is None:
            future.set_result(one)
        else:
            future.set_exception(error)


def error_of(reply: list[Any]) -> ReplyError | None:
    """The Redis error one delivery's reply carries (`{'ERR', message}`), if any."""
    return ReplyError(reply[1].decode(errors="replace")) if reply[0] == b"ERR" else None


def _fail(group: list[Member], exc: BaseException) -> None:
    for _, _, future in group:
        if not future.done():
            future.set_exception(exc)
