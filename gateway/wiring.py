"""Start-up order of one process: store, backends, config cache, worker. Each part registers its
closer; Services.close runs them in reverse."""

from __future__ import annotations

from gateway.backends.base import IngressBackend
from gateway.backends.config_changes import LocalConfigPublisher
from gateway.domain.automation_runs import RunStarter
from gateway.domain.dispatch import task_binder
from gateway.ingress.cache import ConfigCache
from gateway.ingress.change_poller import ChangePoller
from gateway.ingress.pipeline import Ingress
from gateway.services import Services
from gateway.store import migrate
from gateway.worker.consumer import Consumer, Source

# stream entries read per shard and pass (16 shards): at most 64 / 256 per SQL transaction
INLINE_BATCH_PER_SHARD = 4
DEDICATED_BATCH_PER_SHARD = 16


async def start(
    services: Services, *, with_worker: bool | None = None, serving: bool = True
) -> None:
    """`with_worker`: True in `gateway worker` (a process of its own for the evaluator, without
    ingress), None to follow the evaluator setting. `serving` is False for short-lived CLI
    processes, which only need the store and backend."""
    settings = services.settings
    evaluating = with_worker or (with_worker is None and settings.evaluator == "inline")
    await migrate(services.database)
    local = services.config_publisher
    if not isinstance(local, LocalConfigPublisher):
        local = LocalConfigPublisher()
    backend, source = (
        await _redis(services, local, dedicated=with_worker is True)
        if settings.uses_redis
        else await _embedded(services)
    )
    services.closers.append(backend.close)
    if serving and with_worker is not True and settings.serves_ingress:
        cache = ConfigCache(services.database, services.secret_box)
        await cache.preload()
        backend.prepare(config.target for config in cache.configs())
        local.listeners.append(cache.webhook_changed)
        services.ingress = Ingress(settings, cache, backend)
        if not settings.uses_redis:
            poller = ChangePoller(services.database, cache)
            services.spawn(poller.run(), name="ingress-change-poller")
    if evaluating:
        # one RunStarter for the process, so compiled filters are reused across batches
        consumer = Consumer(services, source, RunStarter(services))
        services.spawn(consumer.run(), name="delivery-consumer")
        services.spawn(task_binder(services.database), name="task-binder")


async def _redis(
    services: Services, local: LocalConfigPublisher, *, dedicated: bool
) -> tuple[IngressBackend, Source]:
    from redis.asyncio import Redis

    from gateway.backends.publisher import RedisConfigPublisher
    from gateway.backends.redis import HOT_SCRIPTS, KeySpace, RedisBackend
    from gateway.backends.resp import RespClient
    from gateway.worker.stream_source import StreamSource

    settings = services.settings
    assert settings.redis_url is not None
    redis = Redis.from_url(
        settings.redis_url, socket_connect_timeout=2, socket_timeout=5, protocol=2
    )
    services.closers.append(redis.aclose)
    keyspace = KeySpace(settings.redis_prefix)
    services.config_publisher = RedisConfigPublisher(redis, keyspace, local)
    client = RespClient(settings.redis_url, scripts=HOT_SCRIPTS)
    backend = RedisBackend(client, settings.redis_prefix, settings.auth_failure_limit)
    # sharing the event loop with ingress, the evaluator reads small batches so that it never
    # stalls requests for long; in a process of its own, larger batches mean fewer commits
    batch = DEDICATED_BATCH_PER_SHARD if dedicated else INLINE_BATCH_PER_SHARD
    return backend, StreamSource(redis, keyspace, batch=batch)


async def _embedded(services: Services) -> tuple[IngressBackend, Source]:
    from gateway.backends.memory import MemoryBackend
    from gateway.backends.outbox import OutboxWriter
    from gateway.worker.outbox_source import OutboxSource

    outbox = OutboxWriter(services.database)
    outbox.start()
    backend = MemoryBackend(outbox, services.settings.auth_failure_limit)
    await backend.preload(services.database)
    return backend, OutboxSource(services.database)
