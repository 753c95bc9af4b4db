"""One claimed run executed as a shell command.

The command gets the run's prompt on stdin, followed by the follow-ups users sent to the run,
and RUN_ID, RUN_TITLE, RUN_MODE (this execution's mode), GATEWAY_API_URL, RUN_MESSAGES and
(webhook runs) EVENT_PAYLOAD in its environment, in a process group of its own. RUN_MESSAGES is a
file of JSON lines, one per follow-up (`gateway.platform.runners.models.RunMessage`), to which the
follow-ups sent into the live session are appended as heartbeats bring them. Files the command
leaves in the directory RUN_OUTPUTS become the run's artifacts. While it runs, the lease
is renewed every third of it (at least every MAX_BEAT_S); a cancel reported by the heartbeat
terminates the group (SIGTERM, SIGKILL after KILL_AFTER_S) and the run is acknowledged
CANCELLED; an interrupt is passed on as SIGINT. Exit 0 is SUCCEEDED, anything else FAILED;
the last non-empty stdout line is the status message, stdout and stderr the transcript. The
execution reports everything but the run's end: its runner sends that (`Ended`), together
with its claim of the next runs.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import mimetypes
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, TypeVar

from gateway.runner.client import ApiError, RunnerClient
from gateway.runner.protocol import ClaimedRun, Ending, FileArtifact, Outcome, RunMessage

log = logging.getLogger("gateway.runner")

KILL_AFTER_S = 3.0  # from SIGTERM to SIGKILL of a cancelled or abandoned command
# heartbeats at least this often, so a cancel ends the command within ~5 s (beat + KILL_AFTER_S)
MAX_BEAT_S = 1.5
MAX_STATUS = 500
MAX_TRANSCRIPT = 800_000  # characters kept (the tail), within the finish call's body cap
MAX_OUTPUTS = 20  # files uploaded from RUN_OUTPUTS
MAX_OUTPUT_BYTES = 512 * 1024  # the API's limit for one file artifact
T = TypeVar("T")


@dataclass(frozen=True)
class Ended:
    """How a command ended, for the runner to report: `ending` is the run's item of
    POST /runner/finish."""

    run_id: str
    ending: Ending
    summary: str  # for the runner's progress line, e.g. "SUCCEEDED in 0.8 s (exit 0)"


@dataclass
class Output:
    """What one stream of the command wrote (decoded as UTF-8, bad bytes replaced)."""

    chunks: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(self.chunks)


class Execution:
    def __init__(self, client: RunnerClient, run: ClaimedRun, command: str, lease_s: float) -> None:
        self.client = client
        self.run = run
        self.run_id = run["run_id"]
        self.command = command
        self.lease_s = lease_s
        self.process: subprocess.Popen[bytes] | None = None
        self.stop_requested = threading.Event()  # the runner is shutting down: give it back
        self.cancelled = False
        self.lost = False
        self.messages_file: Path | None = None

    def execute(self) -> Ended | None:
        """Runs the command to its end; returns how it ended, or None when there is nothing to
        report (the lease was lost, or the run was given back because the runner stops)."""
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="gateway-run-") as workdir:
            env = self._environment(Path(workdir))
            # the operator's own command line, run through the shell by design
            self.process = subprocess.Popen(  # noqa: S602
                self.command,
                shell=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=workdir,
                start_new_session=True,  # its own process group: a cancel reaches every child
            )
            self._report(
                "progress", partial(self.client.progress, self.run_id, "INPROGRESS", "running")
            )
            stdout, stderr = Output(), Output()
            pumps = [
                _pump(self.process.stdout, stdout),
                _pump(self.process.stderr, stderr),
                _feed(self.process.stdin, stdin_text(self.run)),
            ]
            code = self._watch()
            for pump in pumps:
                pump.join(KILL_AFTER_S)
            if not (self.lost or self.stop_requested.is_set()):
                self._upload_outputs(Path(workdir) / "outputs")
        elapsed = time.monotonic() - started
        return self._finish(code, stdout.text(), stderr.text(), elapsed)

    def _environment(self, workdir: Path) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("GATEWAY_RUNNER_KEY", None)  # the command gets no runner credentials
        env.update(
            RUN_ID=self.run_id,
            RUN_TITLE=self.run["title"] or "",
            RUN_MODE=self.run["mode"] or "normal",
            GATEWAY_API_URL=self.client.api.removesuffix("/api/v1"),
        )
        self.messages_file = workdir / "messages.jsonl"
        self._append_messages(self.run["messages"])
        env["RUN_MESSAGES"] = str(self.messages_file)
        outputs = workdir / "outputs"
        outputs.mkdir()
        env["RUN_OUTPUTS"] = str(outputs)
        if self.run["event_payload"]:
            path = workdir / "event-payload.json"
            path.write_bytes(self.client.event_payload(self.run_id))
            env["EVENT_PAYLOAD"] = str(path)
        return env

    def _upload_outputs(self, outputs: Path) -> None:
        """Files the command left in RUN_OUTPUTS become the run's FILE artifacts (and its
        task's outputs): at most MAX_OUTPUTS, each at most MAX_OUTPUT_BYTES."""
        files = sorted(p for p in outputs.rglob("*") if p.is_file())
        for path in files[:MAX_OUTPUTS]:
            name = str(path.relative_to(outputs))
            if path.stat().st_size > MAX_OUTPUT_BYTES:
                log.warning("run %s: %s is over %d bytes; not uploaded", self.run_id, name,
                            MAX_OUTPUT_BYTES)  # fmt: skip
                continue
            artifact = FileArtifact(
                artifact_type="FILE",
                filename=path.name,
                filepath=name,
                mime_type=mimetypes.guess_type(path.name)[0] or "application/octet-stream",
                content_base64=base64.b64encode(path.read_bytes()).decode(),
            )
            self._report("artifacts", partial(self.client.upload, self.run_id, artifact))
        if len(files) > MAX_OUTPUTS:
            log.warning("run %s: %d files in RUN_OUTPUTS, the first %d uploaded", self.run_id,
                        len(files), MAX_OUTPUTS)  # fmt: skip

    def _watch(self) -> int:
        """Waits for the command, renewing the lease; acts on cancel, interrupt, lost lease and
        the runner's shutdown."""
        assert self.process is not None
        every = max(0.2, min(self.lease_s / 3, MAX_BEAT_S))
        next_beat = time.monotonic() + every
        while True:
            try:
                return self.process.wait(timeout=min(0.2, every))
            except subprocess.TimeoutExpired:
                pass
            if self.stop_requested.is_set() and not self.cancelled:
                log.info("run %s: the runner is stopping; terminating the command", self.run_id)
                self._terminate()
                return self.process.wait()
            if time.monotonic() < next_beat:
                continue
            next_beat = time.monotonic() + every
            beat = self._report("heartbeat", partial(self.client.heartbeat, self.run_id))
            if beat is None:
                continue
            if beat["messages"]:
                self._append_messages(beat["messages"])
            if beat["cancel_requested"] and not self.cancelled:
                log.info("run %s: cancelled; terminating the command", self.run_id)
                self.cancelled = True
                self._terminate()
            elif beat["interrupt_requested"]:
                log.info("run %s: interrupted; SIGINT to the command", self.run_id)
                self._signal(signal.SIGINT)

    def _append_messages(self, messages: list[RunMessage]) -> None:
        assert self.messages_file is not None
        with self.messages_file.open("a", encoding="utf-8") as out:
            out.writelines(json.dumps(message) + "\n" for message in messages)

    def _report(self, action: str, call: Callable[[], T]) -> T | None:
        """One protocol call about the run; a lost lease ends the command (another runner
        may have the run now), other failures are logged and retried at the next beat."""
        try:
            return call()
        except ApiError as exc:
            if exc.code == "lease_lost" and not self.lost:
                log.warning("run %s: lease lost (%s); abandoning the command", self.run_id, exc)
                self.lost = True
                self._terminate()
            elif not self.lost:
                log.warning("run %s: %s failed: %s", self.run_id, action, exc)
            return None

    def _terminate(self) -> None:
        """SIGTERM to the command's process group, SIGKILL if it is still there after
        KILL_AFTER_S (in the background: the caller goes on waiting for the exit)."""
        self._signal(signal.SIGTERM)

        def kill_later() -> None:
            assert self.process is not None
            try:
                self.process.wait(KILL_AFTER_S)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)

        threading.Thread(target=kill_later, daemon=True).start()

    def _signal(self, sig: int) -> None:
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):  # already gone
            os.killpg(self.process.pid, sig)

    def _finish(self, code: int, stdout: str, stderr: str, elapsed: float) -> Ended | None:
        if self.lost:
            return None
        if self.stop_requested.is_set() and not self.cancelled:
            self._report("release", partial(self.client.release, self.run_id, "its runner stopped"))
            log.info("run %s: given back to the queue", self.run_id)
            return None
        transcript = _transcript(self.command, code, stdout, stderr)
        outcome: Outcome
        error_code: str | None
        if self.cancelled:
            outcome, message, error_code = "CANCELLED", "cancelled", None
        elif code == 0:
            outcome, message, error_code = "SUCCEEDED", _last_line(stdout), None
        else:
            reason = f"signal {-code}" if code < 0 else f"exit status {code}"
            outcome = "FAILED"
            message = _last_line(stdout) or f"the command ended with {reason}"
            error_code = f"signal_{-code}" if code < 0 else f"exit_{code}"
        ending = Ending(run_id=self.run_id, outcome=outcome, transcript=transcript)
        if message:
            ending["status_message"] = message
        if error_code:
            ending["error_code"] = error_code
        return Ended(self.run_id, ending, f"{outcome} in {elapsed:.1f} s (exit {code})")


def _pump(stream: IO[bytes] | None, into: Output) -> threading.Thread:
    def read() -> None:
        assert stream is not None
        for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
            into.chunks.append(chunk.decode(errors="replace"))
        stream.close()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def stdin_text(run: ClaimedRun) -> str:
    """The prompt, then each follow-up sent to the run so far under a header line."""
    parts = [run["prompt"]]
    for message in run["messages"]:
        parts.append(f"\n\n--- follow-up ({message['routing']}, {message['created_at']}) ---\n")
        parts.append(message["message"])
    return "".join(parts)


def _feed(stream: IO[bytes] | None, prompt: str) -> threading.Thread:
    def write() -> None:
        assert stream is not None
        try:
            stream.write(prompt.encode())
            stream.close()
        except (BrokenPipeError, OSError):  # the command does not read its stdin
            pass

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _last_line(stdout: str) -> str:
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    return lines[-1][:MAX_STATUS] if lines else ""


def _transcript(command: str, code: int, stdout: str, stderr: str) -> str:
    text = f"$ {command}\n{stdout}"
    if stderr:
        text += f"\n--- stderr ---\n{stderr}"
    text += f"\n--- exit {code} ---\n"
    return text if len(text) <= MAX_TRANSCRIPT else "[...]\n" + text[-MAX_TRANSCRIPT:]
