"""`gateway runner`: N slots, each claiming one run at a time (long-poll) and executing it.

SIGTERM or SIGINT: no more claims; runs in hand get `grace` seconds to end by themselves, then
their commands are terminated and the runs given back to the queue (QUEUED for another runner).
A second signal gives them back at once. SIGKILL loses nothing either: the leases run out and
the runs are claimed again (docs/runs-and-tasks.md).
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

from gateway.runner.client import ApiError, RunnerClient
from gateway.runner.execution import Execution

log = logging.getLogger("gateway.runner")

CLAIM_WAIT_S = 10.0  # a claim's long-poll; also how long an idle slot takes to notice a stop
RETRY_S = 2.0  # after a failed claim (API unreachable, ...)
VERSION = "1"


@dataclass(frozen=True)
class RunnerOptions:
    api_url: str
    key: str
    command: str
    factory_uid: str | None = None
    concurrency: int = 1
    name: str | None = None
    grace_s: float = 30.0


class Runner:
    def __init__(self, options: RunnerOptions) -> None:
        self.options = options
        self.client = RunnerClient(options.api_url, options.key)
        self.stopping = threading.Event()
        self.lease_s = 30.0
        self._running: dict[str, Execution] = {}
        self._lock = threading.Lock()

    def run(self) -> int:
        """Registers, serves until stopped; exit status for the command line."""
        options = self.options
        host = socket.gethostname()
        try:
            registered = self.client.register(
                name=options.name or f"{host}-runner",
                host=host,
                factory_uid=options.factory_uid,
                concurrency=options.concurrency,
                version=VERSION,
            )
        except ApiError as exc:
            log.error("cannot register with %s: %s", options.api_url, exc)
            return 1
        self.lease_s = float(registered["lease_s"])
        scope = f"factory {options.factory_uid}" if options.factory_uid else "its team"
        log.info(
            "runner %s registered at %s: %d slot(s) for runs of %s, lease %.0f s",
            self.client.runner_uid,
            options.api_url,
            options.concurrency,
            scope,
            self.lease_s,
        )
        slots = [
            threading.Thread(target=self._slot, name=f"slot-{n}", daemon=True)
            for n in range(options.concurrency)
        ]
        for slot in slots:
            slot.start()
        self._wait_for_stop(slots)
        log.info("runner %s stopped", self.client.runner_uid)
        return 0

    def _wait_for_stop(self, slots: list[threading.Thread]) -> None:
        signals = threading.Event()
        count = 0

        def on_signal(signum: int, _frame: object) -> None:
            nonlocal count
            count += 1
            signals.set()
            if count > 1:
                self._give_back_all("a second stop signal")

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, on_signal)
        while not signals.wait(0.5):
            pass
        self.stopping.set()
        with self._lock:
            in_hand = len(self._running)
        log.info(
            "stopping: no more claims; %d run(s) in hand get %.0f s to finish",
            in_hand,
            self.options.grace_s,
        )
        deadline = time.monotonic() + self.options.grace_s
        for slot in slots:
            slot.join(max(0.0, deadline - time.monotonic()))
        self._give_back_all("the grace period ended")
        for slot in slots:
            slot.join()

    def _give_back_all(self, why: str) -> None:
        with self._lock:
            executions = list(self._running.values())
        for execution in executions:
            log.info("run %s: %s; giving it back", execution.run_id, why)
            execution.stop_requested.set()

    def _slot(self) -> None:
        while not self.stopping.is_set():
            try:
                runs = self.client.claim(1, CLAIM_WAIT_S)
            except ApiError as exc:
                log.warning("claim failed: %s; retrying in %.0f s", exc, RETRY_S)
                self.stopping.wait(RETRY_S)
                continue
            for run in runs:
                if self.stopping.is_set():  # claimed while stopping: straight back
                    self._release(run)
                    continue
                self._execute(run)

    def _execute(self, run: dict[str, Any]) -> None:
        log.info("run %s claimed (attempt %s): %s", run["run_id"], run["attempt"], _title(run))
        execution = Execution(self.client, run, self.options.command, self.lease_s)
        with self._lock:
            self._running[execution.run_id] = execution
        try:
            execution.execute()
        except Exception:  # one run's trouble never stops the slot; the lease will lapse
            log.exception("run %s: the runner failed to execute it", execution.run_id)
        finally:
            with self._lock:
                self._running.pop(execution.run_id, None)

    def _release(self, run: dict[str, Any]) -> None:
        try:
            self.client.on(run["run_id"], "release", reason="its runner is stopping")
        except ApiError as exc:
            log.warning("run %s: release failed (%s); its lease will lapse", run["run_id"], exc)


def _title(run: dict[str, Any]) -> str:
    if run.get("title"):
        return str(run["title"])
    lines = str(run.get("prompt") or "").strip().splitlines()
    return lines[0][:60] if lines else ""
