"""Start-up order of one process: store, shared plumbing (Redis), ingress, evaluator. Each part
registers its closer; Services.close runs them in reverse."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from gateway.backends.config_changes import LocalConfigPublisher
from gateway.backends.contract import IngressBackend
from gateway.evaluator.delivery_consumer import Consumer, Source
from gateway.evaluator.delivery_runs import RunStarter
from gateway.ingress.cache import ConfigCache
from gateway.ingress.change_poller import ChangePoller
from gateway.ingress.pipeline import Ingress
from gateway.metrics import export as metrics
from gateway.metrics.counts import COUNTS
from gateway.outbound import Dispatcher, Sender, outbound_client
from gateway.outbound.gauges import with_backlog
from gateway.platform.inbox.notifications import on_subscription_disabled
from gateway.platform.run_start import PLATFORM
from gateway.platform.schedules.scheduler import scheduler
from gateway.platform.scoring.sampling import queue_sampled
from gateway.platform.tasks.binding import task_binder
from gateway.services import Services
from gateway.store import migrate
from gateway.subscriptions.delivery import EventSender

if TYPE_CHECKING:
    import httpx
    from sqlalchemy.ext.asyncio import AsyncConnection

    from gateway.backends.outbox import Outbox
    from gateway.backends.redis_backend import KeySpace
    from gateway.backends.redis_clients import AnyRedis as Redis
    from gateway.backends.request_budget import RequestBudget
    from gateway.settings import Settings

# stream entries read per shard and pass (16 shards): at most 64 / 1,024 per SQL transaction (a
# worker of its own: per-batch statements and round trips amortised over more deliveries;
# 16 -> 64 took the evaluator from ~14k to ~20k deliveries/s that match nothing, ~5.6k to ~7.8k
# that start a run, on SQLite)
INLINE_BATCH_PER_SHARD = 4
DEDICATED_BATCH_PER_SHARD = 64
# pending log rows per SQL transaction (embedded). Beside ingress in one process: small, and a
# read that found fewer waits INLINE_LINGER_S before the next (batches of a few rows cost the
# event loop per-batch statements). In a process of its own on the same SQLite file: ingress's
# commits wait for each of its transactions (one writer per file), so they stay short; on
# PostgreSQL they need not.
INLINE_PENDING_BATCH = 128
INLINE_LINGER_S = 0.05
WORKER_PENDING_BATCH_SQLITE = 128
WORKER_PENDING_BATCH = 1024
# outbox rows per transaction of a worker of its own: ingress never waits for its transactions
# (the outbox is a file of its own), so they can be long enough to amortise per-batch statements
WORKER_OUTBOX_BATCH = 512
# a worker of its own sees the rows another process wrote by looking: this often when idle
WORKER_PENDING_POLL_S = 0.1


async def start(
    services: Services, *, with_worker: bool | None = None, serving: bool = True
) -> Consumer | None:
    """`with_worker`: True in `gateway worker` (a process of its own for the evaluator, without
    ingress), None to follow the evaluator setting. `serving` is False for short-lived CLI
    processes, which only need the store and the config publisher. Returns the delivery
    consumer when this process evaluates."""
    settings = services.settings
    services.runs_completed = queue_sampled  # the runner protocol's finish tells the scorers
    dedicated = with_worker is True
    serves_ingress = serving and not dedicated and settings.serves_ingress
    evaluating = dedicated or (with_worker is None and settings.evaluator == "inline")
    if evaluating and (serving or dedicated):
        # the evaluator writes nearly all of the store: its process runs SQLite's WAL
        # checkpoints, off its commits and at its CPU priority; the other processes (HTTP
        # workers beside an evaluator process) keep SQLite's automatic checkpoints for the
        # little they write themselves
        services.database.start_background_checkpoints()
    if (serving or dedicated) and metrics.multiprocess_dir() is not None:
        services.spawn(metrics.flush_forever(), name="metrics-flush")  # read by others' scrapes
    await migrate(services.database)
    local = services.config_publisher
    if not isinstance(local, LocalConfigPublisher):
        local = LocalConfigPublisher()
    redis = _redis(services, local) if settings.uses_redis else None
    # a long-lived process without Redis reads (and, serving ingress, writes) the outbox
    outbox = _outbox(services) if redis is None and (serving or dedicated) else None
    _probes(services, redis, outbox)
    services.gauges = with_backlog(services.database, services.gauges)
    services.metrics_budget = _metrics_budget(services, redis)
    services.validate_budget = _validate_budget(services, redis)
    backend: IngressBackend | None = None
    if serves_ingress:
        backend = await _ingress(services, local, redis, outbox)
    elif serving and not dedicated and redis is not None and settings.serves_api:
        # an API-only process: replays go through the Redis backend all the same
        backend = await _redis_backend(services)
        services.closers.append(backend.close)
    services.delivery_backend = backend
    if not evaluating:
        return None
    source = (
        _stream_source(services, redis, dedicated)
        if redis is not None
        else _pending_source(services, backend, dedicated, outbox)
    )
    # one RunStarter for the process, so compiled filters are reused across batches; the runs
    # it plans go to the platform through its port
    starter = RunStarter(PLATFORM)
    consumer = Consumer(services.database, source, starter, services.runs_queued.notify)
    COUNTS.evaluators.append(consumer)
    running = services.spawn(consumer.run(), name="delivery-consumer")

    async def finish_the_batch_in_hand() -> None:
        consumer.stop()
        try:
            await running
        finally:
            COUNTS.retire(consumer)  # its totals stay in the metrics, the object goes

    services.stoppers.append(finish_the_batch_in_hand)
    services.spawn(task_binder(services.database), name="task-binder")
    services.spawn(
        scheduler(
            services.database,
            services.settings.scheduler_poll_s,
            services.settings.worker_wait_s,
        ),
        name="scheduler",
    )
    _dispatcher(services)
    return consumer


def _dispatcher(services: Services) -> None:
    """The outbound dispatcher, where the evaluator runs: what changes enqueued (replies,
    events) goes out from here, through one HTTP client that calls public addresses only."""
    settings = services.settings
    http = outbound_client(
        allow_private=settings.outbound_allow_private, timeout=settings.outbound_timeout_s
    )
    services.closers.append(http.aclose)
    senders = _senders(services, http)
    if senders:
        dispatcher = Dispatcher(
            services.database,
            {s.kind: s for s in senders},
            timeout_s=settings.outbound_timeout_s,
        )
        services.spawn(dispatcher.run(), name="outbound-dispatcher")


def _senders(services: Services, http: httpx.AsyncClient) -> list[Sender]:
    """The sender of each outbound kind: replies are posted through their connection
    (connections/), with the run as the platform tells it; events go to their subscriptions
    (subscriptions/delivery.py)."""
    from gateway.connections.reply_sender import ReplySender
    from gateway.platform.runs.record.reply_delivery import SCHEDULE, RunReplySender

    database, settings = services.database, services.settings
    replies = ReplySender(database, services.secret_box, http)
    schedule = dataclasses.replace(SCHEDULE, first_s=settings.reply_retry_s)

    async def subscription_disabled(conn: AsyncConnection, row: Any, why: str) -> None:
        title = f"Event subscription disabled: {row.url}"[:500]
        detail = f"{row.uid} was disabled: {why}. Enable it again with PATCH enabled: true."
        await on_subscription_disabled(conn, row.team_uid, row.factory_uid, title, detail)

    events = EventSender(
        database,
        services.secret_box,
        http,
        disable_after=timedelta(days=settings.event_subscription_disable_after_days),
        on_disabled=subscription_disabled,
    )
    return [RunReplySender(database, replies, settings.console_base_url, schedule), events]


def _outbox(services: Services) -> Outbox | None:
    """Embedded on a SQLite file: where accepted deliveries wait (see gateway.backends.outbox),
    and where the delivery log API finds them until they are evaluated."""
    from gateway.backends.outbox import Outbox, outbox_path

    database = services.database
    path = outbox_path(database)
    if path is None or database.sqlite_file is None:
        return None
    outbox = Outbox(path, database.sqlite_file)
    services.closers.append(outbox.close)
    services.pending_deliveries = outbox
    return outbox


def _probes(services: Services, redis: Redis | None, outbox: Outbox | None) -> None:
    """What GET /readyz checks in this process."""
    from gateway.backends import readiness

    database, max_lag = services.database, services.settings.ready_max_lag_s
    services.probes["store"] = readiness.store_probe(database)
    if redis is None:
        services.probes["evaluator_lag"] = readiness.log_lag_probe(database, max_lag, outbox)
        services.gauges = readiness.log_gauges(database, outbox)
        return
    keyspace = _keyspace(services.settings)
    streams = keyspace.streams()
    services.probes["redis"] = readiness.redis_probe(redis)
    services.probes["evaluator_lag"] = readiness.stream_lag_probe(redis, streams, max_lag)
    backlogs = [counter for counter, _streams in keyspace.backlog_counters()]
    services.gauges = readiness.stream_gauges(redis, backlogs, streams)


def _metrics_budget(services: Services, redis: Redis | None) -> RequestBudget:
    """One budget per caller across the factory metrics endpoints: shared through Redis by
    every process when it is configured."""
    from gateway.backends.request_budget import MemoryBudget, RedisBudget

    settings = services.settings
    if redis is None:
        return MemoryBudget(settings.metrics_rate_limit)
    return RedisBudget(redis, settings.redis_prefix, settings.metrics_rate_limit)


def _validate_budget(services: Services, redis: Redis | None) -> RequestBudget:
    """One budget per client address for the public tree validation, shared like the metrics
    budget (its own keys)."""
    from gateway.backends.request_budget import MemoryBudget, RedisBudget

    settings = services.settings
    if redis is None:
        return MemoryBudget(settings.validate_rate_limit)
    prefix = f"{settings.redis_prefix}:validate"
    return RedisBudget(redis, prefix, settings.validate_rate_limit)


def _redis(services: Services, local: LocalConfigPublisher) -> Redis:
    """The redis-py client, the config publisher and the pending-delivery reader."""
    from gateway.backends.pending_deliveries import RedisPending
    from gateway.backends.redis_clients import connect
    from gateway.backends.redis_publisher import RedisConfigPublisher

    settings = services.settings
    assert settings.redis_url is not None
    redis = connect(settings.redis_url, cluster=settings.redis_cluster)
    services.closers.append(redis.aclose)
    keyspace = _keyspace(settings)
    services.config_publisher = RedisConfigPublisher(redis, keyspace, local)
    services.pending_deliveries = RedisPending(redis, keyspace)
    return redis


async def _ingress(
    services: Services, local: LocalConfigPublisher, redis: Redis | None, outbox: Outbox | None
) -> IngressBackend:
    settings = services.settings
    backend = await (
        _redis_backend(services) if redis is not None else _memory_backend(services, outbox)
    )
    services.closers.append(backend.close)
    cache = ConfigCache(services.database, services.secret_box)
    await cache.preload()
    backend.prepare(config.target for config in cache.configs())
    local.listeners.append(cache.webhook_changed)
    services.ingress = Ingress(settings, cache, backend, services.proxies)
    if redis is None:
        poller = ChangePoller(services.database, cache)
        services.spawn(poller.run(), name="ingress-change-poller")
    return backend


async def _redis_backend(services: Services) -> IngressBackend:
    from gateway.backends.redis_backend import HOT_SCRIPTS, RedisBackend
    from gateway.backends.resp_client import RespClient, ScriptClient
    from gateway.backends.resp_cluster import ClusterRespClient

    settings = services.settings
    assert settings.redis_url is not None
    client: ScriptClient
    if settings.redis_cluster:
        client = ClusterRespClient(settings.redis_url, scripts=HOT_SCRIPTS)
    else:
        client = RespClient(settings.redis_url, scripts=HOT_SCRIPTS)
    return RedisBackend(
        client, settings.redis_prefix, settings.auth_failure_limit, settings.max_backlog
    )


async def _memory_backend(services: Services, outbox: Outbox | None) -> IngressBackend:
    from gateway.backends.delivery_writer import DeliveryWriter
    from gateway.backends.embedded import MemoryBackend

    settings = services.settings
    writer = DeliveryWriter(services.database)
    writer.start()
    backend = MemoryBackend(
        services.database,
        writer,
        settings.auth_failure_limit,
        settings.max_backlog,
        outbox,
        dedup_memory=settings.dedup_memory,
    )
    await backend.preload()
    return backend


def _stream_source(services: Services, redis: Redis, dedicated: bool) -> Source:
    from gateway.evaluator.stream_source import StreamSource

    # sharing the event loop with ingress, the evaluator reads small batches so that it never
    # stalls requests for long; in a process of its own, larger batches mean fewer commits
    batch = DEDICATED_BATCH_PER_SHARD if dedicated else INLINE_BATCH_PER_SHARD
    return StreamSource(redis, _keyspace(services.settings), batch=batch)


def _keyspace(settings: Settings) -> KeySpace:
    """Redis key names; on Cluster each shard counts its own backlog (one slot per script)."""
    from gateway.backends.redis_backend import KeySpace

    return KeySpace(settings.redis_prefix, per_shard_backlog=settings.redis_cluster)


def _pending_source(
    services: Services, backend: IngressBackend | None, dedicated: bool, outbox: Outbox | None
) -> Source:
    from gateway.backends.embedded import MemoryBackend
    from gateway.evaluator.pending_source import PendingSource

    if outbox is not None:
        return _outbox_source(outbox, backend, dedicated)
    database = services.database
    if dedicated or not isinstance(backend, MemoryBackend):
        # another process writes the log: look for its rows
        batch = WORKER_PENDING_BATCH_SQLITE if database.is_sqlite else WORKER_PENDING_BATCH
        return PendingSource(database, batch=batch, idle_wait=WORKER_PENDING_POLL_S)
    # beside this process's ingress: woken by its commits, and its backlog count kept
    return PendingSource(
        database,
        batch=INLINE_PENDING_BATCH,
        linger=INLINE_LINGER_S,
        wake=backend.log.committed,
        on_evaluated=backend.evaluated,
    )


def _outbox_source(outbox: Outbox, backend: IngressBackend | None, dedicated: bool) -> Source:
    from gateway.backends.embedded import MemoryBackend
    from gateway.evaluator.outbox_source import OutboxSource

    if dedicated or not isinstance(backend, MemoryBackend):
        # ingress in another process appends: look for its rows
        return OutboxSource(outbox, batch=WORKER_OUTBOX_BATCH, idle_wait=WORKER_PENDING_POLL_S)
    # beside this process's ingress: woken by its commits, and its backlog count kept
    return OutboxSource(
        outbox,
        batch=INLINE_PENDING_BATCH,
        linger=INLINE_LINGER_S,
        wake=backend.log.committed,
        on_evaluated=backend.evaluated,
    )
