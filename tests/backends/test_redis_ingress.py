from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from redis.exceptions import OutOfMemoryError

from gateway.foundation.store.types import utcnow
from gateway.kernel.security import hash_token
from testbed.redis_server import redis_server
from tests.conftest import make_settings
from tests.ingress.hooks import add_webhook, change_webhook, gateway_on_own_redis
from tests.support import GatewayClient, World, scaled


def _commandstats(client) -> dict[str, int]:  # type: ignore[no-untyped-def]
    stats = client.info("commandstats")
    return {name: int(value["calls"]) for name, value in stats.items()}


def test_one_round_trip_per_accepted_delivery(sqlite_store: Callable[..., str]) -> None:
    with redis_server() as server:
        settings = make_settings(sqlite_store(), server.url, evaluator="off")
        with GatewayClient.running(settings) as gw:
            world = World.create(gw)
            hook = add_webhook(gw, world)
            # warm up: the connection is made and the scripts are loaded
            assert gw.post(hook.path, content=b"0", headers=hook.auth).status_code == 202
            redis = server.client()
            redis.config_resetstat()
            for i in range(1, 21):
                assert gw.post(hook.path, content=b"%d" % i, headers=hook.auth).status_code == 202
            stats = _commandstats(redis)
            stats.pop("cmdstat_info", None)
            stats.pop("cmdstat_config|resetstat", None)
            # commandstats also counts the calls made inside scripts: the only command a client
            # sent is EVALSHA, once per delivery; the rest is what the script does inside
            assert stats.pop("cmdstat_evalsha") == 20
            assert stats["cmdstat_xadd"] == 20
            inside = {
                "get",
                "time",
                "lindex",
                "lpush",
                "ltrim",
                "pexpire",
                "set",
                "xadd",
                "incrby",
                "hset",
            }
            assert {name.removeprefix("cmdstat_") for name in stats} <= inside, stats
            # per accepted delivery alone in its call: GET version, TIME, LINDEX (rate window;
            # the failed-auth budget is not consulted), GET backlog, SET NX GET (de-dup), XADD,
            # HSET pending index, and at the call's end LPUSH + PEXPIRE (window) and INCRBY
            # backlog; no trim below 2 x 60 entries
            assert stats["cmdstat_lindex"] == 20
            assert sum(stats.values()) == 20 * 10, stats
            redis.close()


def test_scripts_flushed_on_a_live_connection_are_loaded_again(
    sqlite_store: Callable[..., str],
) -> None:
    with gateway_on_own_redis(sqlite_store()) as (gw, hook, server):
        redis = server.client()
        large = b'{"pad":"%b"}' % (b"x" * 40_000)  # travels beside the script
        for n, body in enumerate([b'{"n":1}', large, b'{"n":2}', large + b" "]):
            redis.script_flush()  # as after SCRIPT FLUSH: the connection stays up
            response = gw.post(hook.path, content=body, headers=hook.auth)
            assert response.status_code == 202, (n, response.text)
        entries = sum(redis.xlen(f"{{gw:s{s}}}:stream") for s in range(16))
        assert entries == 4
        redis.close()


def test_redis_outage_fails_closed_and_recovers(sqlite_store: Callable[..., str]) -> None:
    with redis_server() as server:
        settings = make_settings(sqlite_store(), server.url, evaluator="off")
        with GatewayClient.running(settings) as gw:
            world = World.create(gw)
            hook = add_webhook(gw, world)
            assert gw.post(hook.path, content=b"1", headers=hook.auth).status_code == 202
            server.stop()
            down = gw.post(hook.path, content=b"2", headers=hook.auth)
            assert down.status_code == 503
            assert down.headers["content-type"] == "application/problem+json"
            assert int(down.headers["retry-after"]) >= 1
            server.start()  # same port, empty data (no persistence in this test)
            deadline = time.monotonic() + scaled(5)
            while True:
                response = gw.post(hook.path, content=b"2", headers=hook.auth)
                if response.status_code == 202 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert response.status_code == 202
            # the failed attempt left no de-duplication marker: "2" was new after recovery
            assert response.json()["delivery_id"] != ""
            redis = server.client()
            entries = sum(redis.xlen(f"{{gw:s{s}}}:stream") for s in range(16))
            assert entries == 1  # only the delivery accepted after the restart
            redis.close()


def test_oom_refusal_is_a_503_and_writes_nothing(sqlite_store: Callable[..., str]) -> None:
    with redis_server("--maxmemory", "1mb", "--maxmemory-policy", "noeviction") as server:
        settings = make_settings(sqlite_store(), server.url, evaluator="off")
        with GatewayClient.running(settings) as gw:
            world = World.create(gw)
            hook = add_webhook(gw, world)
            redis = server.client()
            filler = b"x" * 100_000
            with pytest.raises(OutOfMemoryError):  # fill the server up
                for i in range(100):
                    redis.set(f"filler:{i}", filler)
            before = redis.dbsize()
            response = gw.post(hook.path, content=b'{"a":1}', headers=hook.auth)
            assert response.status_code == 503
            assert redis.dbsize() == before  # refused before the first write
            redis.close()


def test_config_changes_reach_another_process(
    sqlite_store: Callable[..., str], redis_url: str, redis_prefix: str
) -> None:
    import uuid

    settings = make_settings(
        sqlite_store(),
        redis_url,
        prefix=f"{redis_prefix}:{uuid.uuid4().hex}",
        evaluator="off",
    )
    with GatewayClient.running(settings) as one, GatewayClient.running(settings) as two:
        world = World.create(one)
        hook = add_webhook(one, world)
        assert two.post(hook.path, content=b"1", headers=hook.auth).status_code == 202
        # rotate through one: two refuses the old token and takes the new one at once
        change_webhook(one, hook.uid, token_hash=hash_token("wht_rotated"))
        assert two.post(hook.path, content=b"2", headers=hook.auth).status_code == 401
        rotated = {"Authorization": "Bearer wht_rotated"}
        assert two.post(hook.path, content=b"3", headers=rotated).status_code == 202
        change_webhook(one, hook.uid, enabled=False)
        assert two.post(hook.path, content=b"4", headers=rotated).status_code == 404
        change_webhook(one, hook.uid, enabled=True)
        time.sleep(1.1)  # a disabled webhook is remembered for the negative-cache TTL
        assert two.post(hook.path, content=b"5", headers=rotated).status_code == 202
        change_webhook(one, hook.uid, deleted_at=utcnow())
        assert two.post(hook.path, content=b"6", headers=rotated).status_code == 404


def test_request_state_of_preloaded_webhooks_is_built_at_start(
    sqlite_store: Callable[..., str],
) -> None:
    """Built lazily, 10,000 webhooks' request state lands after gc.freeze() and full
    collections scan it (p99 stalls); built at start, requests add nothing long-lived."""
    from gateway.webhook_gateway.transports.redis_stream.ingress import RedisBackend

    with redis_server() as server:
        settings = make_settings(sqlite_store(), server.url, evaluator="off")
        with GatewayClient.running(settings) as gw:
            world = World.create(gw)
            hooks = [add_webhook(gw, world) for _ in range(5)]
        with GatewayClient.running(settings) as gw:  # a new process: these 5 are preloaded
            ingress = gw.services.ingress
            assert ingress is not None and isinstance(ingress.backend, RedisBackend)
            frames = ingress.backend._frames
            assert set(frames) == {hook.uid for hook in hooks}  # before any request
            prepared = dict(frames)
            for hook in hooks:
                assert gw.post(hook.path, content=b"{}", headers=hook.auth).status_code == 202
            # the same objects serve the requests: nothing was rebuilt on the request path
            assert all(frames[uid] is frame for uid, frame in prepared.items())
