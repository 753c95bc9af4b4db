"""Start-up of one process: store, shared plumbing (Redis), the transport, ingress, evaluator,
background work. `start` builds the process's `Services` once, complete; each part registers
what it starts and what it must release with the process's `Lifetime`, which `Services.close`
ends (the closers in reverse). How each transport is tuned (batch sizes, linger, polling) lives
with it, in gateway.webhook_gateway.transports."""

from __future__ import annotations

import gc
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from gateway.foundation.backends.config_changes import ConfigPublisher, LocalConfigPublisher
from gateway.foundation.backends.contract import IngressBackend
from gateway.foundation.backends.pending_deliveries import NothingPending, PendingDeliveries
from gateway.foundation.metrics import export as metrics
from gateway.foundation.metrics.counts import COUNTS
from gateway.foundation.outbound import Dispatcher, Sender, outbound_client
from gateway.foundation.outbound.gauges import with_backlog
from gateway.foundation.outbound.keepalive import KeepAliveClient
from gateway.foundation.services import Lifetime, Services, build_services
from gateway.foundation.store import Database, migrate
from gateway.foundation.subscriptions.delivery import EventSender
from gateway.kernel.allocator import map_large_blocks_apart
from gateway.platform.inbox.notifications import on_subscription_disabled
from gateway.platform.run_start import PLATFORM
from gateway.platform.schedules.scheduler import scheduler
from gateway.platform.scoring.sampling import queue_sampled
from gateway.platform.tasks.binding import task_binder
from gateway.webhook_gateway.evaluator.delivery_consumer import Consumer
from gateway.webhook_gateway.evaluator.delivery_runs import RunStarter
from gateway.webhook_gateway.ingress.cache import ConfigCache
from gateway.webhook_gateway.ingress.change_poller import ChangePoller
from gateway.webhook_gateway.ingress.pipeline import Ingress
from gateway.webhook_gateway.transports.contract import Source

if TYPE_CHECKING:
    import httpx
    from sqlalchemy.ext.asyncio import AsyncConnection

    from gateway.foundation.backends.redis_clients import AnyRedis as Redis
    from gateway.foundation.backends.redis_keys import KeySpace
    from gateway.foundation.backends.request_budget import RequestBudget
    from gateway.kernel.settings import Settings
    from gateway.webhook_gateway.transports.outbox.file import Outbox
    from gateway.webhook_gateway.transports.readiness import Gauges, Probe


class Started(NamedTuple):
    services: Services
    consumer: Consumer | None  # the delivery consumer, when this process evaluates


async def start(
    settings: Settings, *, with_worker: bool | None = None, serving: bool = True
) -> Started:
    """`with_worker`: True in `gateway worker` (a process of its own for the evaluator, without
    ingress), None to follow the evaluator setting. `serving` is False for short-lived CLI
    processes, which only need the store and the config publisher. Whatever started before a
    failure is ended before it is raised."""
    lifetime = Lifetime()
    try:
        return await _start(settings, lifetime, with_worker, serving)
    except BaseException:
        await lifetime.close()
        raise


async def _start(
    settings: Settings, lifetime: Lifetime, with_worker: bool | None, serving: bool
) -> Started:
    dedicated = with_worker is True
    long_lived = serving or dedicated
    serves_ingress = serving and not dedicated and settings.serves_ingress
    evaluating = dedicated or (with_worker is None and settings.evaluator == "inline")
    if long_lived:
        map_large_blocks_apart()
    base = build_services(settings, lifetime)
    database = base.database
    if evaluating and long_lived:
        # the evaluator writes nearly all of the store: its process runs SQLite's WAL
        # checkpoints, off its commits and at its CPU priority; the other processes (HTTP
        # workers beside an evaluator process) keep SQLite's automatic checkpoints for the
        # little they write themselves
        database.start_background_checkpoints()
    if long_lived and metrics.multiprocess_dir() is not None:
        lifetime.spawn(metrics.flush_forever(), name="metrics-flush")  # read by others' scrapes
    await migrate(database)
    local = LocalConfigPublisher()
    redis = _redis(settings, lifetime) if settings.uses_redis else None
    # a long-lived process without Redis reads (and, serving ingress, writes) the outbox
    outbox = _outbox(database, lifetime) if redis is None and long_lived else None
    publisher: ConfigPublisher = local
    pending: PendingDeliveries = outbox if outbox is not None else NothingPending()
    if redis is not None:
        from gateway.foundation.backends.redis_publisher import RedisConfigPublisher
        from gateway.webhook_gateway.transports.redis_stream.pending import RedisPending

        publisher = RedisConfigPublisher(redis, _keyspace(settings), local)
        pending = RedisPending(redis, _keyspace(settings))
    probes, gauges = _probes(settings, database, redis, outbox)
    ingress: Ingress | None = None
    backend: IngressBackend | None = None
    if serves_ingress:
        ingress = await _ingress(base, lifetime, local, redis, outbox)
        backend = ingress.backend
    elif serving and not dedicated and redis is not None and settings.serves_api:
        # an API-only process: replays go through the Redis backend all the same
        backend = _redis_backend(settings)
        lifetime.on_close(backend.close)
    services = replace(
        base,
        config_publisher=publisher,
        pending_deliveries=pending,
        ingress=ingress,
        delivery_backend=backend,
        probes=probes,
        gauges=with_backlog(database, gauges),
        metrics_budget=_metrics_budget(settings, redis),
        validate_budget=_validate_budget(settings, redis),
        runs_completed=queue_sampled,  # the runner protocol's finish tells the scorers
        checkout_token=_checkout_token(settings, lifetime) if serving else None,
    )
    consumer = None
    if evaluating:
        consumer = _evaluator(services, _source(services, redis, outbox, backend, dedicated))
        _background(services)
    if long_lived:
        _refusal_flusher(services, redis if evaluating else None, ingress)
    if serving and not dedicated:
        # config cache, compiled matchers and modules live as long as the process: frozen, the
        # collector stops re-scanning them (full collections stalled requests ~30 ms); the
        # evaluator's consumer freezes what it holds itself
        gc.collect()
        gc.freeze()
    return Started(services, consumer)


def _evaluator(services: Services, source: Source) -> Consumer:
    # one RunStarter for the process, so compiled filters are reused across batches; the runs
    # it plans go to the platform through its port
    starter = RunStarter(PLATFORM)
    consumer = Consumer(services.database, source, starter, services.runs_queued.notify)
    COUNTS.evaluators.append(consumer)
    running = services.lifetime.spawn(consumer.run(), name="delivery-consumer")

    async def finish_the_batch_in_hand() -> None:
        consumer.stop()
        try:
            await running
        finally:
            COUNTS.retire(consumer)  # its totals stay in the metrics, the object goes

    services.lifetime.on_stop(finish_the_batch_in_hand)
    return consumer


def _refusal_flusher(services: Services, redis: Redis | None, ingress: Ingress | None) -> None:
    """`delivery.rejected` events of the refusals no record tells, where they are counted:
    the embedded backend of this process's ingress, or the Redis an evaluator reads."""
    from gateway.foundation.backends.contract import Refusals
    from gateway.webhook_gateway.deliveries import refusal_flusher
    from gateway.webhook_gateway.transports.embedded.backend import MemoryBackend

    refusals: Refusals | None = None
    if redis is not None:
        from gateway.foundation.backends.redis_refusals import RedisRefusals

        refusals = RedisRefusals(redis, _keyspace(services.settings))
    elif ingress is not None and isinstance(ingress.backend, MemoryBackend):
        refusals = ingress.backend.unlogged
    if refusals is None:
        return
    database = services.database
    services.lifetime.spawn(
        refusal_flusher.flush_forever(database, refusals), name="refusal-flusher"
    )

    async def last_flush() -> None:  # what was counted since the last flush
        await refusal_flusher.flush(database, refusals)

    services.lifetime.on_stop(last_flush)


def _background(services: Services) -> None:
    """The background work beside the evaluator: the platform's, and the outbound dispatcher."""
    database, settings, spawn = services.database, services.settings, services.lifetime.spawn
    spawn(task_binder(database), name="task-binder")
    spawn(scheduler(database, settings.scheduler_poll_s, settings.worker_wait_s), name="scheduler")
    _dispatcher(services)


def _dispatcher(services: Services) -> None:
    """The outbound dispatcher, where the evaluator runs: what changes enqueued (replies,
    events) goes out from here, through one HTTP client that calls public addresses only."""
    settings = services.settings
    http = outbound_client(
        allow_private=settings.outbound_allow_private, timeout=settings.outbound_timeout_s
    )
    services.lifetime.on_close(http.aclose)
    # events: many small posts to few subscribers, through kept-alive connections of their own
    lean = KeepAliveClient(
        allow_private=settings.outbound_allow_private, timeout=settings.outbound_timeout_s
    )
    services.lifetime.on_close(lean.aclose)
    senders = _senders(services, http, lean)
    if senders:
        dispatcher = Dispatcher(
            services.database,
            {s.kind: s for s in senders},
            timeout_s=settings.outbound_timeout_s,
        )
        services.lifetime.spawn(dispatcher.run(), name="outbound-dispatcher")


def _senders(services: Services, http: httpx.AsyncClient, lean: KeepAliveClient) -> list[Sender]:
    """The sender of each outbound kind: replies are posted through their connection
    (connections/), with the run as the platform tells it; events go to their subscriptions
    (subscriptions/delivery.py)."""
    from gateway.platform.runs.record.reply_delivery import SCHEDULE, RunReplySender
    from gateway.webhook_gateway.connections.reply_sender import ReplySender

    database, settings = services.database, services.settings
    replies = ReplySender(database, services.secret_box, http)
    schedule = replace(SCHEDULE, first_s=settings.reply_retry_s)

    async def subscription_disabled(conn: AsyncConnection, row: Any, why: str) -> None:
        title = f"Event subscription disabled: {row.url}"[:500]
        detail = f"{row.uid} was disabled: {why}. Enable it again with PATCH enabled: true."
        await on_subscription_disabled(conn, row.team_uid, row.factory_uid, title, detail)

    events = EventSender(
        database,
        services.secret_box,
        lean,
        disable_after=timedelta(days=settings.event_subscription_disable_after_days),
        on_disabled=subscription_disabled,
    )
    return [RunReplySender(database, replies, settings.console_base_url, schedule), events]


def _checkout_token(settings: Settings, lifetime: Lifetime) -> Any:
    """What makes the runners' checkout credentials from their runs' connections, over an
    HTTP client that calls public addresses only (as replies do)."""
    from gateway.webhook_gateway.connections.checkout_credentials import CheckoutCredentials

    http = outbound_client(
        allow_private=settings.outbound_allow_private, timeout=settings.outbound_timeout_s
    )
    lifetime.on_close(http.aclose)
    return CheckoutCredentials(http).token


def _outbox(database: Database, lifetime: Lifetime) -> Outbox | None:
    """Embedded on a SQLite file: where accepted deliveries wait
    (gateway.webhook_gateway.transports.outbox), and where the delivery log API finds them until
    they are evaluated."""
    from gateway.webhook_gateway.transports.outbox.file import Outbox, outbox_path

    path = outbox_path(database)
    if path is None or database.sqlite_file is None:
        return None
    outbox = Outbox(path, database.sqlite_file)
    lifetime.on_close(outbox.close)
    return outbox


def _probes(
    settings: Settings, database: Database, redis: Redis | None, outbox: Outbox | None
) -> tuple[dict[str, Probe], Gauges]:
    """What GET /readyz checks in this process, and the evaluator's backlog gauges."""
    from gateway.webhook_gateway.transports import readiness

    max_lag = settings.ready_max_lag_s
    probes = {"store": readiness.store_probe(database)}
    if redis is None:
        probes["evaluator_lag"] = readiness.log_lag_probe(database, max_lag, outbox)
        return probes, readiness.log_gauges(database, outbox)
    keyspace = _keyspace(settings)
    streams = keyspace.streams()
    probes["redis"] = readiness.redis_probe(redis)
    probes["evaluator_lag"] = readiness.stream_lag_probe(redis, streams, max_lag)
    backlogs = [counter for counter, _streams in keyspace.backlog_counters()]
    return probes, readiness.stream_gauges(redis, backlogs, streams)


def _metrics_budget(settings: Settings, redis: Redis | None) -> RequestBudget:
    """One budget per caller across the factory metrics endpoints: shared through Redis by
    every process when it is configured."""
    from gateway.foundation.backends.request_budget import MemoryBudget, RedisBudget

    if redis is None:
        return MemoryBudget(settings.metrics_rate_limit)
    return RedisBudget(redis, settings.redis_prefix, settings.metrics_rate_limit)


def _validate_budget(settings: Settings, redis: Redis | None) -> RequestBudget:
    """One budget per client address for the public tree validation, shared like the metrics
    budget (its own keys)."""
    from gateway.foundation.backends.request_budget import MemoryBudget, RedisBudget

    if redis is None:
        return MemoryBudget(settings.validate_rate_limit)
    prefix = f"{settings.redis_prefix}:validate"
    return RedisBudget(redis, prefix, settings.validate_rate_limit)


def _redis(settings: Settings, lifetime: Lifetime) -> Redis:
    """The redis-py client of everything but the ingress hot path."""
    from gateway.foundation.backends.redis_clients import connect

    assert settings.redis_url is not None
    redis = connect(settings.redis_url, cluster=settings.redis_cluster)
    lifetime.on_close(redis.aclose)
    return redis


async def _ingress(
    base: Services,
    lifetime: Lifetime,
    local: LocalConfigPublisher,
    redis: Redis | None,
    outbox: Outbox | None,
) -> Ingress:
    settings, database = base.settings, base.database
    backend = (
        _redis_backend(settings) if redis is not None else await _embedded_backend(base, outbox)
    )
    lifetime.on_close(backend.close)
    cache = ConfigCache(database, base.secret_box)
    await cache.preload()
    backend.prepare(config.target for config in cache.configs())
    local.listeners.append(cache.webhook_changed)
    if redis is None:
        poller = ChangePoller(database, cache)
        lifetime.spawn(poller.run(), name="ingress-change-poller")
    return Ingress(settings, cache, backend, base.proxies)


def _redis_backend(settings: Settings) -> IngressBackend:
    """The Redis stream transport's ingress end."""
    from gateway.foundation.backends.resp_client import RespClient, ScriptClient
    from gateway.foundation.backends.resp_cluster import ClusterRespClient
    from gateway.webhook_gateway.transports.redis_stream.ingress import HOT_SCRIPTS, RedisBackend

    assert settings.redis_url is not None
    client: ScriptClient
    if settings.redis_cluster:
        client = ClusterRespClient(settings.redis_url, scripts=HOT_SCRIPTS)
    else:
        client = RespClient(settings.redis_url, scripts=HOT_SCRIPTS)
    return RedisBackend(
        client, settings.redis_prefix, settings.auth_failure_limit, settings.max_backlog
    )


async def _embedded_backend(base: Services, outbox: Outbox | None) -> IngressBackend:
    """The ingress end of the outbox (a SQLite file) or the pending log (elsewhere)."""
    from gateway.webhook_gateway.transports.embedded.backend import MemoryBackend
    from gateway.webhook_gateway.transports.embedded.writer import DeliveryWriter

    settings = base.settings
    writer = DeliveryWriter(base.database)
    writer.start()
    backend = MemoryBackend(
        base.database,
        writer,
        settings.auth_failure_limit,
        settings.max_backlog,
        outbox,
        dedup_memory=settings.dedup_memory,
    )
    await backend.preload()
    return backend


def _source(
    services: Services,
    redis: Redis | None,
    outbox: Outbox | None,
    backend: IngressBackend | None,
    dedicated: bool,
) -> Source:
    """What the evaluator reads: the Redis streams, the outbox, or the pending log; tuned for
    a process of its own or for sharing one with this process's ingress."""
    from gateway.webhook_gateway.transports.embedded.backend import MemoryBackend
    from gateway.webhook_gateway.transports.outbox import source as outbox_source
    from gateway.webhook_gateway.transports.pending_log import source as pending_log_source
    from gateway.webhook_gateway.transports.polled import BesideIngress
    from gateway.webhook_gateway.transports.redis_stream import source as stream_source

    if redis is not None:
        return stream_source.evaluator_source(
            redis, _keyspace(services.settings), dedicated=dedicated
        )
    beside = None
    if not dedicated and isinstance(backend, MemoryBackend):
        beside = BesideIngress(wake=backend.log.committed, on_evaluated=backend.evaluated)
    if outbox is not None:
        return outbox_source.evaluator_source(outbox, beside)
    return pending_log_source.evaluator_source(services.database, beside)


def _keyspace(settings: Settings) -> KeySpace:
    """Redis key names; on Cluster each shard counts its own backlog (one slot per script)."""
    from gateway.foundation.backends.redis_keys import KeySpace

    return KeySpace(settings.redis_prefix, per_shard_backlog=settings.redis_cluster)
