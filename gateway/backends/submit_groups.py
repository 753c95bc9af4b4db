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

from gateway.backends import resp_client
from gateway.backends.resp_client import ReplyError, ReplyLost, ScriptClient

# A script blocks Redis while it runs: a group is bounded (~10 µs of Redis time per delivery)
MAX_GROUP = 64

# One waiting delivery: its keys and arguments, encoded, and the future of its reply
Member = tuple[bytes, bytes, "asyncio.Future[Any]"]


class SubmitGroups:
    def __init__(self, client: ScriptClient, sha: str, *, by_slot: bool) -> None:
        self._client = client
        self._evalsha = resp_client.bulk("EVALSHA") + resp_client.bulk(sha)
        self._by_slot = by_slot
        self._waiting: dict[int, list[Member]] = {}
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
        group.append((keys, args, reply))
        if len(group) >= MAX_GROUP:
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
        try:
            reply = asyncio.ensure_future(self._client.send_script(command, slot))
        except Exception as exc:  # NotSent and the like: every member fails alike
            _fail(group, exc)
            return
        reply.add_done_callback(partial(self._settle, group, command, slot))

    def _settle(
        self, group: list[Member], command: bytes, slot: int, reply: asyncio.Future[Any]
    ) -> None:
        if reply.cancelled():
            _fail(group, ReplyLost("the group's reply was cancelled"))
            return
        exc = reply.exception()
        if isinstance(exc, ReplyError) and resp_client.is_noscript(exc):
            # Redis lost its scripts (restart, SCRIPT FLUSH): `script` loads them and retries
            retry = asyncio.ensure_future(self._client.script(command, slot=slot))
            retry.add_done_callback(partial(self._distribute, group))
            return
        self._distribute(group, reply)

    @staticmethod
    def _distribute(group: list[Member], reply: asyncio.Future[Any]) -> None:
        if reply.cancelled():
            _fail(group, ReplyLost("the group's reply was cancelled"))
            return
        exc = reply.exception()
        if exc is not None:
            _fail(group, exc)
            return
        for (_, _, future), one in zip(group, reply.result(), strict=True):
            if future.done():
                continue
            if one[0] == b"ERR":
                future.set_exception(ReplyError(one[1].decode(errors="replace")))
            else:
                future.set_result(one)


def _fail(group: list[Member], exc: BaseException) -> None:
    for _, _, future in group:
        if not future.done():
            future.set_exception(exc)
