"""A process's Services: built once by wiring, never changed after; shutdown is bounded (a
background task or closer that ignores cancellation is left behind with a warning instead of
holding the process forever)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from typing import Any

import pytest

import gateway.foundation.services
from gateway.foundation.services import build_services
from tests.conftest import make_settings


async def _stubborn() -> None:
    while True:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            continue  # ignores cancellation, as a buggy client library might


async def test_stuck_steps_do_not_block_shutdown(
    sqlite_store: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(gateway.foundation.services, "SHUTDOWN_GRACE", 0.2)
    services = build_services(make_settings(sqlite_store("g.db")))
    services.spawn(_stubborn(), name="stubborn")
    closed: list[str] = []

    async def stuck_closer() -> None:
        await _stubborn()

    async def good_closer() -> None:
        closed.append("good")

    services.lifetime.on_close(good_closer)
    services.lifetime.on_close(stuck_closer)
    started = time.monotonic()
    await services.close()
    assert time.monotonic() - started < 2.0
    assert closed == ["good"]  # closers after a stuck one still run
    assert "did not finish" in caplog.text
    for task in asyncio.all_tasks() - {asyncio.current_task()}:  # don't leak into other tests
        task.cancel()
        task.get_coro().close()  # type: ignore[union-attr]


async def test_stoppers_finish_work_in_hand_before_anything_is_cancelled(
    sqlite_store: Callable[..., str],
) -> None:
    services = build_services(make_settings(sqlite_store("g.db")))
    stop = asyncio.Event()
    finished: list[str] = []

    async def worker() -> None:
        await stop.wait()
        await asyncio.sleep(0.05)  # the batch in hand
        finished.append("batch written")

    task = services.spawn(worker(), name="worker")

    async def graceful() -> None:
        stop.set()
        await task

    services.lifetime.on_stop(graceful)
    await services.close()
    assert finished == ["batch written"] and not task.cancelled()


async def test_services_are_built_once_and_not_changed_later(
    sqlite_store: Callable[..., str],
) -> None:
    from gateway.composition import wiring

    services, consumer = await wiring.start(
        make_settings(sqlite_store("g.db")), with_worker=False, serving=False
    )
    try:
        assert consumer is None and services.ingress is None
        with pytest.raises(dataclasses.FrozenInstanceError):
            services.ingress = None  # type: ignore[misc]
    finally:
        await services.close()


async def test_a_failed_start_ends_what_it_started(
    sqlite_store: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing is left running or open when start-up fails midway (the app has no Services to
    close then)."""
    from gateway.composition import wiring

    closed: list[str] = []
    real = gateway.foundation.services.build_services

    def tracked(settings: Any, lifetime: Any = None) -> Any:
        services = real(settings, lifetime)

        async def noted() -> None:
            closed.append("base")

        services.lifetime.on_close(noted)
        return services

    async def broken_migration(_database: Any) -> None:
        raise RuntimeError("migration failed")

    monkeypatch.setattr(wiring, "build_services", tracked)
    monkeypatch.setattr(wiring, "migrate", broken_migration)
    with pytest.raises(RuntimeError, match="migration failed"):
        await wiring.start(make_settings(sqlite_store("g.db")), serving=False)
    assert closed == ["base"]
