"""`gateway runner`: up to N runs at a time, each executed in a thread of its own.

Runs are claimed with `POST /runner/finish`: when a command ends, one call reports the run's end
and claims as many runs as the runner then has free slots, so a busy runner makes one call per
run. While slots are free and no run ends, one long-poll of that call (finishing nothing)
waits for queued runs; at most one long-polls at a time, and a run that ends meanwhile is
reported at once by a call that does not wait.

SIGTERM or SIGINT: no more claims (a long-poll in flight is cut short, so an idle runner stops at
once); runs in hand get `grace` seconds to end by themselves, then their commands are terminated
and the runs given back to the queue (QUEUED for another runner). A second signal gives them
back at once. SIGKILL loses nothing either: the leases run out and
the runs are claimed again (docs/runs-and-tasks.md).
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
import time
from dataclasses import dataclass

from gateway.platform.runner.checkout import CheckoutSettings
from gateway.platform.runner.client import ApiError, RunnerClient
from gateway.platform.runner.execution import Ended, Execution
from gateway.platform.runner.protocol import ClaimedRun, FinishedRun, ItemProblem
from gateway.platform.runner.slots import Claim, Slots

log = logging.getLogger("gateway.runner")

CLAIM_WAIT_S = 10.0  # a claim's long-poll (a stop cuts it short: client.stop_waiting)
RETRY_S = 2.0  # after a failed long-poll (API unreachable, ...)
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
    worker_id: str | None = None  # a self-hosted worker: only runs pinned to it
    checkout: CheckoutSettings | None = None  # --checkout: each run's repository cloned first


class Runner:
    def __init__(self, options: RunnerOptions) -> None:
        self.options = options
        self.client = RunnerClient(options.api_url, options.key)
        self.stopping = threading.Event()
        self.lease_s = 30.0
        self.slots = Slots(options.concurrency)
        self._running: dict[str, Execution] = {}
        self._threads: set[threading.Thread] = set()  # one per run in hand, while it lasts
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
                worker_id=options.worker_id,
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
        poller = threading.Thread(target=self._poll, name="poll", daemon=True)
        poller.start()
        self._wait_for_stop(poller)
        log.info("runner %s stopped", self.client.runner_uid)
        return 0

    def _wait_for_stop(self, poller: threading.Thread) -> None:
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
        self.slots.close()
        # an idle runner is waiting in a long-poll: end it now rather than when it times out
        self.client.stop_waiting()
        with self._lock:
            in_hand = len(self._running)
        log.info(
            "stopping: no more claims; %d run(s) in hand get %.0f s to finish",
            in_hand,
            self.options.grace_s,
        )
        deadline = time.monotonic() + self.options.grace_s
        for thread in [poller, *self._threads_now()]:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._give_back_all("the grace period ended")
        for thread in [poller, *self._threads_now()]:
            thread.join()

    def _threads_now(self) -> list[threading.Thread]:
        with self._lock:
            return list(self._threads)

    def _give_back_all(self, why: str) -> None:
        with self._lock:
            executions = list(self._running.values())
        for execution in executions:
            log.info("run %s: %s; giving it back", execution.run_id, why)
            execution.stop_requested.set()

    def _poll(self) -> None:
        """Long-polls for runs while slots are free and no other call does so."""
        while not self.stopping.is_set():
            if not self.slots.wait_for_long_poll(0.5):
                continue
            if not self._exchange([], self.slots.reserve()):
                self.stopping.wait(RETRY_S)

    def _exchange(self, ended: list[Ended], claim: Claim) -> bool:
        """One POST /runner/finish: reports the runs `ended`, claims runs for the slots
        `claim` reserved and starts them. False when the call failed (logged)."""
        if not ended and not claim.runs:
            self.slots.settle(claim, 0)
            return True
        wait_s = CLAIM_WAIT_S if claim.long_poll else 0.0
        endings = [each.ending for each in ended]
        runs: list[ClaimedRun] = []
        try:
            answer = self.client.finish_and_claim(endings, claim.runs, wait_s)
            runs = answer["runs"]
        except ApiError as exc:
            for each in ended:  # as when a finish call fails: the lease will lapse
                log.warning("run %s: finish failed: %s", each.run_id, exc)
            if not ended and not self.stopping.is_set():  # a stop cuts long-polls short
                log.warning("claim failed: %s; retrying in %.0f s", exc, RETRY_S)
            return False
        finally:
            self.slots.settle(claim, len(runs))
        _log_finished(ended, answer["finished"])
        for run in runs:
            self._start(run)
        return True

    def _start(self, run: ClaimedRun) -> None:
        if self.stopping.is_set():  # claimed while stopping: straight back
            self._release(run)
            self.slots.done()
            return
        options = self.options
        execution = Execution(self.client, run, options.command, self.lease_s, options.checkout)
        execution.hold_lease()  # from the claim's answer until the finish's
        thread = threading.Thread(target=self._execute, args=(execution,), daemon=True)
        with self._lock:
            self._threads.add(thread)
            self._running[execution.run_id] = execution
        thread.start()

    def _execute(self, execution: Execution) -> None:
        """A run's thread: executes it, then reports its end and claims the next runs. Its
        lease is renewed until that report is answered (a run given back or up: no longer)."""
        run = execution.run
        log.info("run %s claimed (attempt %s): %s", run["run_id"], run["attempt"], _title(run))
        ended: Ended | None = None
        try:
            ended = execution.execute()
        except Exception:  # one run's trouble never stops the runner; the lease will lapse
            log.exception("run %s: the runner failed to execute it", execution.run_id)
        finally:
            with self._lock:
                self._running.pop(execution.run_id, None)
            claim = self.slots.done_and_reserve()
            if ended:
                execution.finishing()
            else:  # given back, lost, or the runner failed it: nothing to renew for
                execution.let_go()
        try:
            self._exchange([ended] if ended else [], claim)
        finally:
            execution.let_go()
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _release(self, run: ClaimedRun) -> None:
        try:
            self.client.release(run["run_id"], "its runner is stopping")
        except ApiError as exc:
            log.warning("run %s: release failed (%s); its lease will lapse", run["run_id"], exc)


def _log_finished(ended: list[Ended], finished: list[FinishedRun]) -> None:
    """The progress line of each run reported; a lost lease (the run expired or another runner
    has it now) gives the run up, as does any other problem."""
    summaries = {each.run_id: each.summary for each in ended}
    for item in finished:
        run_id = item["run_id"]
        if item["ok"]:
            log.info("run %s: %s", run_id, summaries.get(run_id, item["state"]))
            continue
        problem = item["problem"]
        why = "no reason given" if problem is None else _why(problem)
        if problem is not None and problem["code"] == "lease_lost":
            log.warning("run %s: lease lost (%s); not finished, given up", run_id, why)
        else:
            log.warning("run %s: finish failed: %s", run_id, why)


def _why(problem: ItemProblem) -> str:
    return f"{problem['status']} {problem['code']}: {problem['detail']}"


def _title(run: ClaimedRun) -> str:
    if run["title"]:
        return run["title"]
    lines = run["prompt"].strip().splitlines()
    return lines[0][:60] if lines else ""
