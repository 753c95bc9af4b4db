"""GATEWAY_EVALUATOR=process: `gateway serve` runs the evaluator as a supervised child process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from gateway.composition.collector import GC_THRESHOLDS
from gateway.webhook_gateway.evaluator import child_process as evaluator_child
from gateway.webhook_gateway.evaluator.child_process import EvaluatorProcess
from gateway.webhook_gateway.evaluator.cpu_priority import (
    CGROUP_ROOT,
    _cpu_cgroups,
    idle_cgroup_name,
)
from testbed.procs import free_port
from tests.ingress.hooks import gateway_env, serve_gateway, stop_gateway
from tests.support import eventually, scaled

pytestmark = pytest.mark.service  # its own redis-server, processes or sockets

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited, unreaped


def _children(pid: int) -> list[int]:
    task = Path(f"/proc/{pid}/task")
    return [int(c) for t in task.iterdir() for c in (t / "children").read_text().split()]


def test_a_child_that_dies_is_restarted_and_stop_ends_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(evaluator_child, "FIRST_RESTART_DELAY_S", 0.05)
    process = EvaluatorProcess(SLEEPER, stop_timeout=5)
    process.start()
    try:
        first = eventually(lambda: process.pid, timeout=5)
        os.kill(first, signal.SIGKILL)
        second = eventually(lambda: process.pid if process.pid != first else None, timeout=5)
        assert process.restarts == 1 and _alive(second)
    finally:
        process.stop()
    assert not _alive(second)
    time.sleep(0.2)
    assert process.pid == second, "no restart after stop()"


def test_a_child_that_ignores_sigterm_is_killed_on_stop() -> None:
    stubborn = [
        sys.executable,
        "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)",
    ]
    process = EvaluatorProcess(stubborn, stop_timeout=0.5)
    process.start()
    pid = eventually(lambda: process.pid, timeout=5)
    time.sleep(0.3)  # the child has installed its handler
    started = time.monotonic()
    process.stop()
    assert not _alive(pid)
    assert time.monotonic() - started < 5


def _idle_groups(name: str) -> list[Path]:
    """Where the idle cgroup `name` exists in this host's cgroup tree."""
    bases = _cpu_cgroups(Path("/proc/self/cgroup").read_text(), CGROUP_ROOT)
    return [base / name for base in bases if (base / name).exists()]


def _serve_env(postgres_url: str, redis_url: str, deployment: str, **more: str) -> dict[str, str]:
    return gateway_env(
        database_url=postgres_url,
        redis_url=redis_url,
        redis_prefix=deployment,
        secret_key="a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s=",
        log_level="info",
        **more,
    )


def _child_of(server: subprocess.Popen[bytes]) -> int:
    return int(eventually(lambda: _children(server.pid)[0] if _children(server.pid) else None))


@pytest.mark.slow
def test_serve_runs_the_evaluator_child_at_normal_priority_and_it_never_outlives_the_server(
    tmp_path: Path, postgres_url: str, redis_url: str, redis_prefix: str
) -> None:
    """As shipped, beside Redis: the child runs at normal priority and writes no cgroup (an idle
    one used to be made in the host's tree); killed outright, the server takes it along."""
    deployment = f"{redis_prefix}:{uuid.uuid4().hex}"
    env = _serve_env(postgres_url, redis_url, deployment)
    assert "GATEWAY_EVALUATOR" not in env  # the default with Redis is `process`
    assert "GATEWAY_EVALUATOR_PRIORITY" not in env

    # stopped in order: SIGTERM to the server stops its evaluator too
    log = tmp_path / "serve.log"
    server = serve_gateway(env, free_port(), log)
    try:
        child = _child_of(server)
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        assert cmdline[-6:-1] == [
            b"worker", b"--parent-pid", str(server.pid).encode(), b"--lifeline-fd",
            cmdline[-2],
        ]  # fmt: skip
        eventually(lambda: b"gateway worker running" in log.read_bytes())
        assert os.getpriority(os.PRIO_PROCESS, child) == 0
        assert os.sched_getscheduler(child) == os.SCHED_OTHER
        assert "normal priority" in log.read_text()
        # its batches' short-lived rows are not walked by the cyclic collector ~75 times each
        assert f"cyclic collector every {GC_THRESHOLDS[0]} allocations" in log.read_text()
        assert _idle_groups(idle_cgroup_name(deployment)) == []  # the host's tree untouched
    finally:
        stop_gateway(server)
    assert not _alive(child)

    # killed outright: the child sees its lifeline close (and, on Linux, gets SIGTERM) at once
    server = serve_gateway(env, free_port(), log)
    child = _child_of(server)
    eventually(lambda: log.read_bytes().count(b"gateway worker running") == 2)
    server.kill()
    server.wait(10)
    eventually(lambda: not _alive(child), timeout=5)
    assert b"is gone" in log.read_bytes() or b"gateway worker stopped" in log.read_bytes()


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="makes a cgroup: needs root")
def test_the_idle_cgroup_is_made_only_when_asked_and_removed_on_a_clean_stop(
    tmp_path: Path, postgres_url: str, redis_url: str, redis_prefix: str
) -> None:
    deployment = f"{redis_prefix}:{uuid.uuid4().hex}"
    idle_cgroup = idle_cgroup_name(deployment)  # this deployment's own: no other gateway's
    env = _serve_env(
        postgres_url, redis_url, deployment, evaluator_priority="idle", evaluator_idle_cgroup="1"
    )
    log = tmp_path / "serve.log"
    server = serve_gateway(env, free_port(), log)
    try:
        child = _child_of(server)
        eventually(lambda: b"gateway worker running" in log.read_bytes())
        assert os.getpriority(os.PRIO_PROCESS, child) == 19
        assert os.sched_getscheduler(child) == os.SCHED_IDLE
        if _cpu_cgroups(Path("/proc/self/cgroup").read_text(), CGROUP_ROOT):
            assert f"/{idle_cgroup}" in Path(f"/proc/{child}/cgroup").read_text()
            assert "idle cgroup /" in log.read_text()
        else:
            assert "no idle cgroup (not permitted)" in log.read_text()
        # a child that gets no CPU time (SCHED_IDLE on a busy host) cannot stop by itself: the
        # server kills it after its stop timeout, and removes the cgroup it left behind
        os.kill(child, signal.SIGSTOP)
    finally:
        stop_gateway(server, grace=60)
    assert not _alive(child)
    assert _idle_groups(idle_cgroup) == []  # a clean stop of the server removes it again
    assert b"did not stop; killing it" in log.read_bytes()


@pytest.mark.slow  # starts processes of its own
def test_a_worker_stops_when_its_lifeline_closes(tmp_path: Path) -> None:
    """The lifeline alone (its parent, this test, lives on): EOF on the pipe stops the worker,
    cleanly, as a server's death would."""
    env = gateway_env(database_url=f"sqlite:///{tmp_path}/gw.db", log_level="info")
    env["GATEWAY_SECRET_KEY"] = "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s="
    read_end, write_end = os.pipe()
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "gateway", "worker", "--lifeline-fd", str(read_end)],
            env=env,
            stdout=out,
            stderr=out,
            pass_fds=(read_end,),
        )
    os.close(read_end)
    try:
        eventually(lambda: b"gateway worker running" in log.read_bytes(), timeout=30)
        assert worker.poll() is None
        os.close(write_end)
        assert worker.wait(scaled(10)) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    text = log.read_text()
    assert "lifeline closed" in text and "gateway worker stopped" in text


@pytest.mark.slow  # starts processes of its own
def test_a_worker_started_for_a_server_that_is_already_gone_stops(tmp_path: Path) -> None:
    """The server died while its child was still starting: the child is someone else's now."""
    env = gateway_env(database_url=f"sqlite:///{tmp_path}/gw.db", log_level="info")
    env["GATEWAY_SECRET_KEY"] = "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s="
    gone = [sys.executable, "-m", "gateway", "worker", "--parent-pid", str(os.getpid() + 10**6)]
    done = subprocess.run(gone, env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert b"is gone; stopping" in done.stderr
