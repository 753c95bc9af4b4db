"""`gateway serve --workers 2` as real processes on Redis, its evaluator a child process: every
scrape, whichever worker answers it, shows the deliveries both workers accepted and what the
evaluator child evaluated; each process keeps its own file in PROMETHEUS_MULTIPROC_DIR."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.multiprocess import MultiProcessCollector

from gateway.foundation.metrics.directory import MULTIPROC_ENV, prepare_multiprocess_dir
from tests.conftest import make_settings
from tests.ingress.hooks import gateway_env, prepare_token_webhook, stop_gateway
from tests.metrics.scrape import parse, value
from tests.support import eventually

pytestmark = pytest.mark.slow

TOKEN = "metrics-test-token"
SENT = 40  # under the webhook's rate limit (60 a minute)
PORTS = range(18100, 18200)
ACCEPTED = ("gateway_ingress_deliveries_total", {"outcome": "accepted"})


def _free_port() -> int:
    for port in PORTS:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 18100-18199")


@pytest.fixture
def served(tmp_path: Path, redis_url: str, redis_prefix: str) -> Iterator[tuple[str, str, Path]]:
    """(base URL, webhook uid, the metrics directory) of a two-worker `gateway serve`."""
    db = f"sqlite:///{tmp_path}/gw.db"
    prefix = f"{redis_prefix}:{uuid.uuid4().hex}"
    uid = asyncio.run(prepare_token_webhook(make_settings(db, redis_url, prefix=prefix), TOKEN))
    metrics_dir = tmp_path / "metrics"
    env = gateway_env(
        database_url=db,
        redis_url=redis_url,
        redis_prefix=prefix,
        secret_key=base64.urlsafe_b64encode(b"t" * 32).decode(),
        evaluator="process",
        # counted, not ranked: at idle priority the evaluator gets no CPU on a busy test host
        evaluator_priority="low",
        log_level="warning",
    ) | {MULTIPROC_ENV: str(metrics_dir)}
    port = _free_port()
    argv = [sys.executable, "-m", "gateway", "serve", "--port", str(port), "--workers", "2"]
    with (tmp_path / "serve.log").open("wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        eventually(lambda: _answers(base), timeout=30)
        yield base, uid, metrics_dir
    finally:
        stop_gateway(proc)


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def _per_process_accepted(metrics_dir: Path) -> dict[str, float]:
    """Accepted deliveries by the file (process) that counted them."""
    found = {}
    for path in metrics_dir.glob("counter_*.db"):
        for metric in MultiProcessCollector.merge([str(path)]):
            for sample in metric.samples:
                if (sample.name, sample.labels) == ACCEPTED:
                    found[path.name] = sample.value
    return found


def test_counts_of_both_workers_and_the_evaluator_add_up(served: tuple[str, str, Path]) -> None:
    base, uid, metrics_dir = served
    for n in range(SENT):  # a new connection each: either worker may accept it
        headers = {"Authorization": f"Bearer {TOKEN}", "X-Service-Delivery-Id": f"d{n}"}
        answer = httpx.post(f"{base}/webhooks/w/{uid}", content=b"{}", headers=headers)
        assert answer.status_code == 202, answer.text
    time.sleep(1.5)  # each worker hands its counts over once a second

    by_process = _per_process_accepted(metrics_dir)
    assert len([n for n in by_process.values() if n > 0]) == 2, by_process  # both served
    assert sum(by_process.values()) == SENT
    for _ in range(6):  # whichever worker answers, it shows every worker's counts
        scraped = parse(httpx.get(f"{base}/metrics").text)
        assert value(scraped, ACCEPTED[0], **ACCEPTED[1]) == SENT
        assert value(scraped, "gateway_ingress_request_duration_seconds_count") == SENT

    def evaluated() -> bool:
        scraped = parse(httpx.get(f"{base}/metrics").text)
        return value(scraped, "gateway_evaluator_deliveries_total") == SENT

    eventually(evaluated)  # counted in the evaluator child, shown by the workers
    pids = {int(p.stem.split("_")[-1]) for p in metrics_dir.glob("counter_*.db")}
    assert len(pids) == 3  # two workers and the evaluator child


def test_serve_owns_its_metrics_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MULTIPROC_ENV, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    orphan = tmp_path / f"gateway-metrics-{dead.pid}-left"  # its server was SIGKILLed
    orphan.mkdir()
    (orphan / "counter_1.db").write_bytes(b"")
    mine = tmp_path / f"gateway-metrics-{os.getpid()}-alive"
    mine.mkdir()
    remove = prepare_multiprocess_dir()
    created = Path(os.environ[MULTIPROC_ENV])
    assert created.is_dir() and created.parent == tmp_path
    assert not orphan.exists() and mine.exists()  # a live server's directory is left alone
    remove()
    assert not created.exists() and MULTIPROC_ENV not in os.environ

    given = tmp_path / "given"
    given.mkdir()
    (given / "counter_123.db").write_bytes(b"left by an earlier server")
    (given / "notes.txt").write_text("not ours")
    monkeypatch.setenv(MULTIPROC_ENV, str(given))
    prepare_multiprocess_dir()()
    assert sorted(p.name for p in given.iterdir()) == ["notes.txt"]
