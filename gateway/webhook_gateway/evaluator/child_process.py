"""The evaluator as a child process of `gateway serve` (GATEWAY_EVALUATOR=process).

Evaluating deliveries into runs is batch SQL work; inside a serving process it takes CPU and
event-loop time from ingress, whose latency senders see. So `gateway serve` runs one
`gateway worker` beside its HTTP workers, restarts it if it dies (with back-off), and stops it
when the server stops. The child sets its own CPU priority (GATEWAY_EVALUATOR_PRIORITY) and dies
with this process if it disappears without stopping it (SIGKILL, OOM killer), two ways:

- the lifeline: a pipe whose write end only this process holds; the child watches the read end,
  and the kernel closes the write end when this process dies, however it dies: EOF (portable);
- on Linux also a parent-death signal (PR_SET_PDEATHSIG, SIGTERM), which the kernel sends when
  the thread that started the child ends.

Either way the child stops as on SIGTERM: the batch in hand is written and acknowledged, so a
restarted server's evaluator does not wait for entries the old one had read.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
import time

from gateway.webhook_gateway.evaluator.cpu_priority import remove_idle_cgroup

log = logging.getLogger("gateway.evaluator")

FIRST_RESTART_DELAY_S = 1.0
MAX_RESTART_DELAY_S = 30.0
HEALTHY_AFTER_S = 60.0  # a child that ran this long restarts after the first delay again


class EvaluatorProcess:
    def __init__(
        self,
        argv: list[str] | None = None,
        stop_timeout: float = 15.0,
        idle_cgroup: str | None = None,
    ) -> None:
        # the idle cgroup the child makes (GATEWAY_EVALUATOR_IDLE_CGROUP=1): removed here once
        # the child is gone, for a child killed before it could leave it
        self.idle_cgroup = idle_cgroup
        # the lifeline: the child reads `_lifeline`; `_held` is open only here (pipes are not
        # inherited across exec), so the child reads EOF once this process is gone
        self._lifeline, self._held = os.pipe()
        self.argv = argv or [
            sys.executable, "-m", "gateway", "worker",
            "--parent-pid", str(os.getpid()), "--lifeline-fd", str(self._lifeline),
        ]  # fmt: skip
        self.stop_timeout = stop_timeout
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._supervise, name="evaluator", daemon=True)
        self.restarts = 0

    @property
    def pid(self) -> int | None:
        with self._lock:
            return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        self._thread.start()

    def _spawn(self) -> subprocess.Popen[bytes] | None:
        with self._lock:
            if self._stopping.is_set():
                return None
            # own session: a Ctrl-C in the terminal reaches the server, which then stops the
            # child in order, rather than both at once
            self._proc = subprocess.Popen(  # noqa: S603
                self.argv, start_new_session=True, pass_fds=(self._lifeline,)
            )
            return self._proc

    def _supervise(self) -> None:
        delay = FIRST_RESTART_DELAY_S
        while (proc := self._spawn()) is not None:
            started = time.monotonic()
            log.info("evaluator process %d started", proc.pid)
            code = proc.wait()
            if self._stopping.is_set():
                return
            if time.monotonic() - started >= HEALTHY_AFTER_S:
                delay = FIRST_RESTART_DELAY_S
            log.error("evaluator process exited with status %s; restarting in %.0f s", code, delay)
            self.restarts += 1
            if self._stopping.wait(delay):
                return
            delay = min(delay * 2, MAX_RESTART_DELAY_S)

    def stop(self) -> None:
        """SIGTERM the child (it finishes its batch and exits), SIGKILL it if it lingers."""
        with self._lock:
            self._stopping.set()
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                log.warning("evaluator process %d did not stop; killing it", proc.pid)
                proc.kill()
                proc.wait()
        self._thread.join(self.stop_timeout)
        if self.idle_cgroup is not None:
            remove_idle_cgroup(self.idle_cgroup)
        for fd in (self._lifeline, self._held):
            with contextlib.suppress(OSError):
                os.close(fd)
