"""Redis ingress backend, shared by every gateway process: the deliveries of one event-loop turn
leave in one EVALSHA (submit_groups.py), one round trip."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from redis.crc import key_slot

from gateway.foundation.backends import lua_scripts, resp_client
from gateway.foundation.backends.contract import (
    DEDUP_WINDOW_S,
    RATE_LIMIT,
    RATE_WINDOW_MS,
    REJECT_LOG_LIMIT,
    Label,
    Outcome,
    Submission,
    Target,
    Verdict,
)
from gateway.foundation.backends.redis_keys import KeySpace, WebhookKeys, digest
from gateway.foundation.backends.resp_client import (
    RedisUnavailable,
    ReplyError,
    ReplyLost,
    ScriptClient,
)
from gateway.kernel.errors import Unavailable
from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.transports.redis_stream.submit_groups import SubmitGroups, error_of

log = logging.getLogger("gateway.ingress")

SUBMIT_SHA = lua_scripts.sha1(lua_scripts.SUBMIT_SCRIPT)
AUTH_FAILED_SHA = lua_scripts.sha1(lua_scripts.AUTH_FAILED_SCRIPT)
LOG_REJECTION_SHA = lua_scripts.sha1(lua_scripts.LOG_REJECTION_SCRIPT)
HOT_SCRIPTS = (
    lua_scripts.SUBMIT_SCRIPT,
    lua_scripts.AUTH_FAILED_SCRIPT,
    lua_scripts.LOG_REJECTION_SCRIPT,
)


# Bodies from this size on travel beside the script: a plain SET just before it, in the same
# write (one round trip), which Redis stores without copying. Passed through the Lua VM, a 200 KB
# body cost Redis ~3x its stream append (copied into Lua, back out, then appended).
SIDE_BODY_MIN = 32 * 1024
# a side body whose script never ran (connection lost in between) expires after this
SIDE_BODY_ORPHAN_TTL_S = 3600


class SubmitFrame:
    """One webhook's part of SUBMIT (at one config version), encoded once.

    Encoding 21 keys and arguments per request cost ~10 µs; all but seven are the same for every
    delivery to a webhook, so they are encoded when the webhook is first seen and the request
    path joins the pre-encoded parts with the seven per-request bulk strings.
    """

    __slots__ = ("body_prefix", "fixed_args", "fixed_keys", "seen_prefix", "slot", "version")

    def __init__(self, k: WebhookKeys, target: Target, max_backlog: int) -> None:
        self.version = target.version
        self.slot = key_slot(k.stream.encode())  # the Cluster hash slot of the webhook's keys
        self.seen_prefix = k.seen_prefix
        self.body_prefix = k.body_prefix
        fixed_keys = (k.version, k.rate, k.rejects, k.stream, k.refused, k.backlog, k.pending)
        self.fixed_keys = b"".join([resp_client.bulk(key) for key in fixed_keys])
        fixed_args = (
            RATE_LIMIT,
            RATE_WINDOW_MS,
            REJECT_LOG_LIMIT,
            DEDUP_WINDOW_S,
            target.webhook_uid,
            target.version,
            max_backlog,
        )
        self.fixed_args = b"".join([resp_client.bulk(a) for a in fixed_args])

    def keys(self, s: Submission) -> bytes:
        """The delivery's 8 keys: the webhook's 7, then seen(identity)."""
        seen = (self.seen_prefix + digest(s.identity)).encode()
        return b"%b$%d\r\n%b\r\n" % (self.fixed_keys, len(seen), seen)

    def args(self, s: Submission, body_in_key: bool = False) -> bytes:
        """The delivery's 13 arguments (the body left out when it waits in a key of its own)."""
        # one bytes-format of everything (a bulk() call per argument plus a join cost ~2x)
        delivery_id = s.delivery_id.encode()
        identity = s.identity.encode()
        headers = s.headers
        size = len(s.body)
        body = b"" if body_in_key or not s.valid_json else s.body
        return _ARGS_TAIL % (
            self.fixed_args,
            len(delivery_id),
            delivery_id,
            b"1" if s.valid_json else b"0",
            len(b"%d" % size),
            size,
            len(body),
            body,
            len(identity),
            identity,
            len(headers),
            headers,
        )

    def side_commands(self, s: Submission) -> tuple[tuple[bytes, ...], bytes]:
        """(SET of the body in pieces, SUBMIT of the delivery alone naming the body's key as
        its 9th) for a large valid-JSON body."""
        body_key = self.body_prefix + s.delivery_id
        store = resp_client.command_parts(("SET", body_key), s.body, ("EX", SIDE_BODY_ORPHAN_TTL_S))
        submit = b"%b%b%b%b" % (
            _SIDE_HEAD,
            self.keys(s),
            resp_client.bulk(body_key),
            self.args(s, body_in_key=True),
        )
        return store, submit


# EVALSHA SUBMIT of one delivery with a side body: 9 keys and 13 arguments
_SIDE_HEAD = (
    resp_client.array_head(3 + 9 + 13)
    + resp_client.bulk("EVALSHA")
    + resp_client.bulk(SUBMIT_SHA)
    + resp_client.bulk(9)
)
# fixed arguments, delivery id, JSON flag, size, body, identity, headers
_ARGS_TAIL = b"%b$%d\r\n%b\r\n$1\r\n%b\r\n$%d\r\n%d\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n"


class RedisBackend:
    def __init__(
        self, client: ScriptClient, prefix: str, auth_failure_limit: int, max_backlog: int
    ) -> None:
        self.client = client
        # on Cluster (a client that routes by slot) each shard counts its own backlog
        self.keyspace = KeySpace(prefix, per_shard_backlog=client.routes_by_slot)
        self.auth_failure_limit = auth_failure_limit
        self.max_backlog = self.keyspace.backlog_limit(max_backlog)
        self._keys: dict[str, WebhookKeys] = {}
        self._frames: dict[str, SubmitFrame] = {}
        self._groups = SubmitGroups(client, SUBMIT_SHA, by_slot=client.routes_by_slot)

    def keys(self, target: Target) -> WebhookKeys:
        keys = self._keys.get(target.webhook_uid)
        if keys is None:
            if len(self._keys) > 100_000:  # bounded: random uids never get this far (404)
                self._keys.clear()
                self._frames.clear()
            keys = self._keys[target.webhook_uid] = self.keyspace.webhook(
                target.webhook_uid, target.shard
            )
        return keys

    def prepare(self, targets: Iterable[Target]) -> None:
        for target in targets:
            self._frame(target)

    def _frame(self, target: Target) -> SubmitFrame:
        frame = self._frames.get(target.webhook_uid)
        if frame is None or frame.version != target.version:
            frame = SubmitFrame(self.keys(target), target, self.max_backlog)
            self._frames[target.webhook_uid] = frame
        return frame

    async def submit(self, s: Submission) -> Outcome:
        frame = self._frame(s.target)
        try:
            if s.valid_json and len(s.body) >= SIDE_BODY_MIN:
                store, submit = frame.side_commands(s)
                (reply,) = await self.client.script(submit, before=store, slot=frame.slot)
                if (error := error_of(reply)) is not None:
                    raise error
            else:
                reply = await self._groups.submit(frame.slot, frame.keys(s), frame.args(s))
        except RedisUnavailable as exc:
            raise _unavailable(exc) from exc
        if reply[0] == b"NOBODY":  # the body's SET failed (e.g. maxmemory): nothing recorded
            log.warning(
                "ingress: large body for webhook %s not stored; answered 503", s.target.webhook_uid
            )
            raise Unavailable(
                "delivery log refused the body (out of memory?); nothing was recorded",
                retry_after=REFUSED_RETRY_AFTER_S,
            )
        return _outcome(reply)

    async def auth_failed(
        self, target: Target, source: str, delivery_id: str, size: int, reason: Reason
    ) -> Outcome:
        k = self.keys(target)
        reply = await self._eval(
            AUTH_FAILED_SHA,
            (k.version, k.auth_prefix + source, k.rejects, k.stream, k.refused, k.backlog),
            (
                target.version,
                self.auth_failure_limit,
                RATE_WINDOW_MS,
                REJECT_LOG_LIMIT,
                delivery_id,
                target.webhook_uid,
                size,
                self.max_backlog,
                reason.value,
            ),
        )
        return _outcome(reply)

    async def log_rejection(
        self, target: Target, delivery_id: str, size: int, label: Label, reason: Reason
    ) -> None:
        k = self.keys(target)
        await self._eval(
            LOG_REJECTION_SHA,
            (k.rejects, k.stream, k.refused, k.backlog),
            (
                *(RATE_WINDOW_MS, REJECT_LOG_LIMIT, delivery_id, target.webhook_uid, size),
                *(label.value, self.max_backlog, reason.value),
            ),
        )

    async def _eval(self, sha: str, keys: tuple[str, ...], args: tuple[Any, ...]) -> Any:
        try:
            return await self.client.evalsha(sha, keys, args)
        except RedisUnavailable as exc:
            raise _unavailable(exc) from exc

    async def close(self) -> None:
        await self.client.close()


# Redis refused the write (out of memory, most likely): waiting a little longer gives it time
REFUSED_RETRY_AFTER_S = 5


def _unavailable(cause: RedisUnavailable) -> Unavailable:
    """The 503 for a failed Redis call, saying whether the delivery may have been recorded."""
    if isinstance(cause, ReplyLost):
        # the script was sent: Redis may have run it after we stopped waiting. A retry with the
        # same delivery id is answered 202 with the first id if it did
        return Unavailable(
            "no reply from the delivery log in time; the delivery may have been recorded: "
            "retry with the same delivery id",
            retry_after=1,
        )
    if isinstance(cause, ReplyError):
        oom = str(cause).startswith("OOM")
        return Unavailable(
            f"delivery log refused the write ({str(cause)[:60]}); nothing was recorded",
            retry_after=REFUSED_RETRY_AFTER_S if oom else 1,
        )
    return Unavailable("delivery log unreachable; nothing was recorded", retry_after=1)


_VERDICTS = {verdict.value.encode(): verdict for verdict in Verdict}
_ACCEPTED = Verdict.ACCEPTED


def _outcome(reply: list[Any]) -> Outcome:
    verdict = _VERDICTS[reply[0]]
    if verdict is _ACCEPTED:  # the common case first
        return Outcome(verdict, reply[1].decode())
    if verdict in (Verdict.RATE_LIMITED, Verdict.AUTH_LIMITED):
        return Outcome(verdict, retry_after_ms=int(reply[1]))
    if verdict in (Verdict.ACCEPTED, Verdict.DUPLICATE):
        return Outcome(verdict, delivery_id=reply[1].decode())
    return Outcome(verdict)
