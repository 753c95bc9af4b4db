"""Large bodies travel beside the SUBMIT script (a pipelined SET of their own key), on a real
Redis: accepted ones are named by their stream entry and outlive the orphan TTL until the
evaluator has logged them; refused ones leave nothing behind; a missing key refuses with 503."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import orjson
import pytest
from redis.asyncio import Redis as AsyncRedis

from gateway.foundation.backends.contract import Submission, Target
from gateway.foundation.backends.redis_keys import KeySpace
from gateway.foundation.backends.resp_client import RespClient
from gateway.kernel.errors import Unavailable
from gateway.webhook_gateway.transports.redis_stream.ingress import (
    HOT_SCRIPTS,
    SIDE_BODY_MIN,
    RedisBackend,
)
from gateway.webhook_gateway.transports.redis_stream.source import StreamSource
from testbed.redis_server import redis_server
from tests.ingress.hooks import gateway_on_own_redis

pytestmark = pytest.mark.service  # its own redis-server, processes or sockets


def _large_json(seq: int) -> bytes:
    body = orjson.dumps({"seq": seq, "pad": "x" * (SIDE_BODY_MIN + 1000)})
    assert len(body) > SIDE_BODY_MIN
    return body


def _body_keys(redis) -> list[bytes]:  # type: ignore[no-untyped-def]
    return sorted(redis.scan_iter(match="*:body:*", count=1000))


def _stream_fields(redis) -> list[dict[bytes, bytes]]:  # type: ignore[no-untyped-def]
    entries = []
    for shard in range(16):
        entries += [fields for _, fields in redis.xrange(f"{{gw:s{shard}}}:stream")]
    return entries


def test_accepted_large_body_is_kept_until_the_evaluator_logged_it(
    sqlite_store: Callable[..., str],
) -> None:
    with gateway_on_own_redis(sqlite_store()) as (gw, hook, server):
        redis = server.client()
        body = _large_json(1)
        response = gw.post(hook.path, content=body, headers=hook.auth)
        assert response.status_code == 202
        delivery_id = response.json()["delivery_id"]
        (fields,) = _stream_fields(redis)
        assert b"p" not in fields  # the body is not in the stream entry ...
        (key,) = _body_keys(redis)
        assert fields[b"k"] == key and key.endswith(delivery_id.encode())
        assert redis.get(key) == body  # ... but in its own key, without the orphan TTL
        assert redis.ttl(key) == -1

        async def evaluate() -> None:
            client = AsyncRedis.from_url(server.url)
            source = StreamSource(client, KeySpace("gw"), batch=16, idle_wait=0.0)
            try:
                (entry,) = await source.read()
                assert entry.record.delivery_id == delivery_id
                assert entry.record.payload == body
                await source.acknowledge([entry])
            finally:
                await client.aclose()

        asyncio.run(evaluate())
        assert _body_keys(redis) == []
        assert _stream_fields(redis) == []
        redis.close()


def test_refused_large_bodies_leave_no_key(sqlite_store: Callable[..., str]) -> None:
    with gateway_on_own_redis(sqlite_store()) as (gw, hook, server):
        redis = server.client()

        def send(seq: int, delivery: str) -> int:
            headers = {**hook.auth, "X-Service-Delivery-Id": delivery}
            return gw.post(hook.path, content=_large_json(seq), headers=headers).status_code

        assert send(0, "first") == 202
        assert send(0, "first") == 202  # a duplicate: answered with the first id
        assert len(_body_keys(redis)) == 1
        invalid = b"{" + b"x" * SIDE_BODY_MIN  # large, but not JSON: never stored aside
        assert gw.post(hook.path, content=invalid, headers=hook.auth).status_code == 400
        statuses = [send(seq, f"d-{seq}") for seq in range(1, 61)]
        # the duplicate and the invalid one count in the window: 57 more fit, then 429
        assert statuses.count(202) == 57 and set(statuses[57:]) == {429}
        assert len(_body_keys(redis)) == 58  # one per accepted delivery, none for refusals
        accepted = [f for f in _stream_fields(redis) if f[b"l"] == b"Accepted"]
        assert sorted(f[b"k"] for f in accepted) == _body_keys(redis)
        redis.close()


def test_missing_body_key_refuses_before_any_write() -> None:
    with redis_server() as server:
        redis = server.client()

        async def run() -> None:
            client = RespClient(server.url, scripts=HOT_SCRIPTS)
            backend = RedisBackend(client, "gw", auth_failure_limit=20, max_backlog=100_000)
            target = Target("whk_big", 1, 3)
            submission = Submission(target, "dlv_1", "id-1", _large_json(1), True)
            try:
                frame = backend._frame(target)
                _store, submit = frame.side_commands(submission)
                before = redis.dbsize()
                assert await client.script(submit) == [[b"NOBODY"]]  # sent without its SET
                assert redis.dbsize() == before
                # Redis refuses the SET (here: an ACL without it): the delivery is a 503
                password = uuid.uuid4().hex
                redis.acl_setuser(
                    "noset", enabled=True, passwords=[f"+{password}"], keys=["*"],
                    commands=["+@all", "-set"],
                )  # fmt: skip
                url = server.url.replace("redis://", f"redis://noset:{password}@")
                limited = RedisBackend(RespClient(url, scripts=HOT_SCRIPTS), "gw", 20, 100_000)
                try:
                    with pytest.raises(Unavailable):
                        await limited.submit(submission)
                finally:
                    await limited.close()
                assert redis.dbsize() == before
                # with its SET the same submission is accepted
                assert (await backend.submit(submission)).delivery_id == "dlv_1"
                assert redis.get("{gw:s3}:body:dlv_1") == submission.body
            finally:
                await backend.close()

        asyncio.run(run())
        redis.close()
