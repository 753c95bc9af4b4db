"""The resources one process owns, created in the lifespan and shared by API, ingress and worker."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from gateway.foundation.backends.config_changes import ConfigPublisher, LocalConfigPublisher
from gateway.foundation.backends.contract import IngressBackend
from gateway.foundation.backends.key_cache import KeyCache
from gateway.foundation.backends.pending_deliveries import NothingPending, PendingDeliveries
from gateway.foundation.backends.request_budget import RequestBudget
from gateway.foundation.backends.wakeup import Wakeup
from gateway.foundation.blobs import BlobStore
from gateway.foundation.store import Database
from gateway.http.trusted_proxies import TrustedProxies
from gateway.kernel.security import SecretBox
from gateway.kernel.settings import Settings
from gateway.kernel.types import Receive

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection


class IngressHandle(Protocol):
    """What the ingress endpoint calls (gateway.webhook_gateway.ingress.pipeline.Ingress)."""

    async def accept(
        self,
        webhook_uid: str,
        path_token: str | None,
        headers: Mapping[str, str],
        peer: str | None,
        receive: Receive,
    ) -> str: ...


class Lifetime:
    """What one process started and must end: background tasks, graceful stops (finish what is
    in hand) and closers. Each part of the process registers here as it starts; `close` ends
    them, the closers in reverse."""

    def __init__(self) -> None:
        self.background: set[asyncio.Task[Any]] = set()
        self._stoppers: list[Callable[[], Awaitable[None]]] = []
        self._closers: list[Callable[[], Awaitable[None]]] = []

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run `coro` in the background, keep a reference, log (never lose) its failure."""
        task = asyncio.create_task(coro, name=name)
        self.background.add(task)
        task.add_done_callback(_forget(self.background))
        return task

    def on_stop(self, stop: Callable[[], Awaitable[None]]) -> None:
        """A graceful end of background work, run before anything is cancelled."""
        self._stoppers.append(stop)

    def on_close(self, close: Callable[[], Awaitable[None]]) -> None:
        """A resource to release once the background work is over (the last registered first)."""
        self._closers.append(close)

    async def close(self) -> None:
        """Stops background work and releases resources; each step gets SHUTDOWN_GRACE seconds,
        so a stuck step is logged and left behind instead of holding the process forever."""
        for stop in self._stoppers:
            await _within_grace(stop(), getattr(stop, "__qualname__", "stopper"))
        self._stoppers.clear()
        for task in list(self.background):
            task.cancel()
        if self.background:
            await _within_grace(asyncio.gather(*self.background, return_exceptions=True), "tasks")
        for close in reversed(self._closers):
            await _within_grace(close(), getattr(close, "__qualname__", "closer"))
        self._closers.clear()


@dataclass(frozen=True, slots=True)
class Services:
    """Built once and complete: the shared base by `build_services`, the process's parts by
    `gateway.composition.wiring.start`. Nothing is set on it later; what a part starts or must
    release is registered with `lifetime`."""

    settings: Settings
    database: Database
    secret_box: SecretBox
    # attachment content (GATEWAY_ATTACHMENT_STORE: the store, a directory or S3)
    blobs: BlobStore
    # the background tasks, graceful stops and closers of this process
    lifetime: Lifetime
    # whose forwarded headers are believed (GATEWAY_TRUSTED_PROXIES): ingress and console
    proxies: TrustedProxies = field(default_factory=TrustedProxies)
    config_publisher: ConfigPublisher = field(default_factory=LocalConfigPublisher)
    # accepted deliveries not in the SQL log yet (Redis streams, the outbox), for the delivery
    # log API
    pending_deliveries: PendingDeliveries = field(default_factory=NothingPending)
    # agents' API keys authenticated lately (runners call often); see its module for the bound
    agent_keys: KeyCache = field(default_factory=KeyCache)
    # runners this process saw, while their recorded presence is fresh (runners/registry.runner_of)
    runners_seen: KeyCache = field(default_factory=KeyCache)
    # told when this process queued runs (started by deliveries, dispatched, given back): wakes
    # the runners' long-polling claims at once
    runs_queued: Wakeup = field(default_factory=Wakeup)
    # when this process serves ingress; the app hands it to the ingress endpoint through the
    # lifespan state
    ingress: IngressHandle | None = None
    # the ingress backend, for deliveries the API itself submits (replays); None in a process
    # that has none (a worker, an API-only process on the embedded backend)
    delivery_backend: IngressBackend | None = None
    # readiness checks by name (GET /readyz): None when fine, else what is wrong
    probes: Mapping[str, Callable[[], Awaitable[str | None]]] = field(default_factory=dict)
    # the evaluator's backlog and lag, read from the store or Redis when /metrics is scraped
    gauges: Callable[[], Awaitable[dict[str, float]]] | None = None
    # requests each caller may make to the factory metrics endpoints
    metrics_budget: RequestBudget | None = None
    # told of the runs a runner's finish completed (SUCCEEDED or FAILED), in that transaction:
    # the platform's scorers sample them (wiring gives it; runners sit below scoring)
    runs_completed: Callable[[AsyncConnection, Sequence[Any]], Awaitable[None]] | None = None
    # requests each client address may make to POST /factory-files/validate (no key needed)
    validate_budget: RequestBudget | None = None
    # makes the token a runner clones a connection's repository with (provider, the
    # connection's settings, owner, name -> (token, expiry) or a failure): wiring gives it
    # (connections/checkout_credentials.py; the services sit below connections)
    checkout_token: Callable[[str, Any, str, str], Awaitable[Any]] | None = None

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        return self.lifetime.spawn(coro, name)

    async def close(self) -> None:
        """Ends this process's background work, then releases its resources, the store last."""
        await self.lifetime.close()


def build_services(settings: Settings, lifetime: Lifetime | None = None) -> Services:
    """The shared base of every process: store, secret box, attachment store, proxies; the
    other fields at their defaults (a process that wires nothing else: CLI commands, tests)."""
    from gateway.foundation.blobs import open_blob_store
    from gateway.foundation.store import create_database

    lifetime = lifetime or Lifetime()
    database = create_database(settings.database_url, synchronous=settings.sqlite_synchronous)
    lifetime.on_close(database.close)  # registered first: closed last
    blobs = open_blob_store(settings.attachments, database)
    lifetime.on_close(blobs.close)
    return Services(
        settings=settings,
        database=database,
        secret_box=SecretBox(settings.secret_key),
        blobs=blobs,
        lifetime=lifetime,
        proxies=TrustedProxies(settings.trusted_proxies),
    )


SHUTDOWN_GRACE = 5.0


async def _within_grace(step: Awaitable[Any], name: str) -> None:
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=SHUTDOWN_GRACE)
    if not done:
        task.cancel()  # not awaited: a step that ignores cancellation must not block shutdown
        logging.getLogger("gateway").warning(
            "shutdown: %s did not finish within %.0f s; left behind", name, SHUTDOWN_GRACE
        )
    elif task.exception() is not None:
        logging.getLogger("gateway").warning("shutdown: %s failed", name, exc_info=task.exception())


def _forget(tasks: set[asyncio.Task[Any]]) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logging.getLogger("gateway").error(
                "background task %s failed", task.get_name(), exc_info=task.exception()
            )

    return done
