"""One claimed run executed as a shell command (docs/runners.md#what-the-command-gets).

The runner file's setup commands run first, in the working directory (a failing one ends the
run FAILED, `setup_failed`). The command gets the composed prompt on stdin (the agent's base
prompt, the skills it may use, the run's prompt, then the follow-ups users sent to the run),
and RUN_ID, RUN_TITLE, RUN_MODE (this execution's mode), RUN_AGENT, RUN_MODEL, RUN_HARNESS,
RUN_CONTEXT, RUN_SKILLS, RUN_MCP_CONFIG, GATEWAY_API_URL, RUN_MESSAGES, RUN_ATTACHMENTS, (webhook
runs) EVENT_PAYLOAD, each of the run's secrets and its harness's key in its environment, in a
process group of its own. Secret values are masked in everything reported of the run
(transcript, status message). RUN_MESSAGES is a file of JSON lines, one per follow-up
(`gateway.platform.runners.models.RunMessage`), to which the follow-ups sent into the live session
are appended as heartbeats bring them. RUN_ATTACHMENTS is a directory holding the run's files
(`<attachment id>/<name>`): those it was created with and those follow-ups carry, downloaded from
their signed URLs before a follow-up naming them is written to RUN_MESSAGES (each of its `files`
then has the `path`). Files the command
leaves in the directory RUN_OUTPUTS become the run's artifacts. From the claim's answer until
its runner has the answer to the run's finish (`hold_lease`, `let_go`), the lease is renewed
every third of it (at least every MAX_BEAT_S), whatever the run is at: downloading its files,
running setup or the command, uploading outputs, or being finished. A cancel reported by a
heartbeat terminates the group (SIGTERM, SIGKILL after KILL_AFTER_S) and the run is
acknowledged CANCELLED; one reported before the command started means it never starts.
Follow-ups a heartbeat brings before the start join the prompt on stdin too. An interrupt is
passed on as SIGINT (one before the command starts has nothing to interrupt). Exit 0 is
SUCCEEDED, anything else FAILED;
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
import queue
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any, TypeVar

from gateway.platform.runner.checkout import (
    CHECKOUT_FAILED,
    RUNNER_FILES,
    CheckoutSettings,
    git_environment,
    git_steps,
    header_values,
    sends_token,
    target_of,
)
from gateway.platform.runner.client import ApiError, RunnerClient
from gateway.platform.runner.protocol import (
    AttachmentFile,
    ClaimedRun,
    Ending,
    FileArtifact,
    Heartbeat,
    Outcome,
    RunMessage,
)

log = logging.getLogger("gateway.runner")

KILL_AFTER_S = 3.0  # from SIGTERM to SIGKILL of a cancelled or abandoned command
# heartbeats at least this often, so a cancel ends the command within ~5 s (beat + KILL_AFTER_S)
MAX_BEAT_S = 1.5
MAX_STATUS = 500
MAX_TRANSCRIPT = 800_000  # characters kept (the tail), within the finish call's body cap
MAX_OUTPUTS = 20  # files uploaded from RUN_OUTPUTS
MAX_OUTPUT_BYTES = 512 * 1024  # the API's limit for one file artifact
SETUP_FAILED = "setup_failed"  # the error_code of a run whose setup command failed
EVENT_PAYLOAD_UNAVAILABLE = "event_payload_unavailable"  # its event payload could not be had
CHECKOUT_TOKEN = "GATEWAY_CHECKOUT_TOKEN"  # noqa: S105 -- the variable holding the token
# how masks name the credential of the run's provider connection (`[secret CONNECTION_TOKEN]`)
CONNECTION_TOKEN = "CONNECTION_TOKEN"  # noqa: S105 -- a name, not a token
CANCELLED_BEFORE_START = "--- cancelled before the command started ---\n"  # its transcript's end
MIN_MASKED = 4  # secret values this long or longer are masked in what is reported of a run
# where each third-party harness's CLI reads its API key (docs/runners.md#the-harnesss-key)
HARNESS_KEYS: dict[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_API_KEY",),
    "codex": ("CODEX_API_KEY", "OPENAI_API_KEY"),
    "gemini": ("GEMINI_API_KEY",),
}
T = TypeVar("T")


@dataclass(frozen=True)
class Ended:
    """How a command ended, for the runner to report: `ending` is the run's item of
    POST /runner/finish."""

    run_id: str
    ending: Ending
    summary: str  # for the runner's progress line, e.g. "SUCCEEDED in 0.8 s (exit 0)"


@dataclass
class Prepared:
    """What was done before the command (fetching the event payload, the checkout, the setup
    commands): their transcript, and the failure that ended the run (its status message and
    error code)."""

    transcript: str = ""
    failed: str | None = None
    error_code: str | None = None

    def fail(self, error_code: str, message: str) -> None:
        self.failed, self.error_code = message, error_code


@dataclass
class Output:
    """What one stream of the command wrote (decoded as UTF-8, bad bytes replaced)."""

    chunks: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(self.chunks)


class Execution:
    def __init__(
        self,
        client: RunnerClient,
        run: ClaimedRun,
        command: str,
        lease_s: float,
        checkout: CheckoutSettings | None = None,
    ) -> None:
        self.client = client
        self.checkout = checkout  # --checkout: the repository cloned before setup
        self.run = run
        self.run_id = run["run_id"]
        self.command = command
        self.lease_s = lease_s
        self.process: subprocess.Popen[bytes] | None = None
        self.stop_requested = threading.Event()  # the runner is shutting down: give it back
        self.cancelled = False
        self.lost = False
        self.messages_file: Path | None = None
        self.attachments_dir: Path | None = None
        self.secrets = {name: value for name, value in run.get("secrets", {}).items() if value}
        self.config: dict[str, Any] = dict(run.get("agent_config") or {})
        self.masks: list[tuple[str, str]] = []  # (value, name) masked besides the secrets
        self.skills_dir: Path | None = None
        self.payload_path: Path | None = None  # EVENT_PAYLOAD
        self.prepared = Prepared()
        self.command_started = False  # the command itself (after setup)
        self.beats: queue.SimpleQueue[Heartbeat] = queue.SimpleQueue()  # for the command
        self.beat_every = max(0.2, min(lease_s / 3, MAX_BEAT_S))
        self._let_go = threading.Event()
        self._finishing = False
        self._lock = threading.Lock()  # a process's start against a lost lease

    def hold_lease(self) -> None:
        """Renews the lease from now (the claim's answer) until `let_go`, in a thread of its
        own: a heartbeat every `beat_every` seconds, whatever the run is at (downloads, setup,
        the command, uploads, its finish). What each heartbeat brings waits in `beats`."""
        name = f"lease-{self.run_id}"
        threading.Thread(target=self._keep_lease, name=name, daemon=True).start()

    def finishing(self) -> None:
        """The run's end is on its way: the lease is still renewed until `let_go`, and a
        heartbeat the finish overtook (409 `lease_lost`) only ends the renewals."""
        self._finishing = True

    def let_go(self) -> None:
        """No more heartbeats: the run's finish was answered, or the run given back or up."""
        self._let_go.set()

    def _keep_lease(self) -> None:
        while not self._let_go.wait(self.beat_every):
            try:
                beat = self.client.heartbeat(self.run_id)
            except ApiError as exc:
                if exc.code == "lease_lost":
                    if not self._finishing:
                        self._lose(exc)
                    return
                if not self._let_go.is_set():
                    log.warning("run %s: heartbeat failed: %s", self.run_id, exc)
                continue
            self.beats.put(beat)

    def execute(self) -> Ended | None:
        """Runs the command to its end; returns how it ended, or None when there is nothing to
        report (the lease was lost, or the run was given back because the runner stops)."""
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="gateway-run-") as workdir:
            env = self._environment(Path(workdir))
            self._report(
                "progress", partial(self.client.progress, self.run_id, "INPROGRESS", "running")
            )
            if self.prepared.failed is None and self.checkout is not None:
                self._checkout(workdir)
            if self.prepared.failed is None:
                self._setup(workdir, env)
            command_started = self.prepared.failed is None and self._start(
                self.command, env, workdir, the_command=True
            )
            if not command_started:
                return self._not_started(time.monotonic() - started)
            assert self.process is not None
            stdout, stderr = Output(), Output()
            pumps = [
                _pump(self.process.stdout, stdout),
                _pump(self.process.stderr, stderr),
                _feed(self.process.stdin, stdin_text(self.run, self.skills_dir)),
            ]
            code = self._watch()
            for pump in pumps:
                pump.join(KILL_AFTER_S)
            if not (self.lost or self.stop_requested.is_set()):
                self._upload_outputs(Path(workdir) / "outputs")
        elapsed = time.monotonic() - started
        return self._finish(code, stdout.text(), stderr.text(), elapsed, self.prepared.transcript)

    def _start(
        self, command: str | list[str], env: dict[str, str], cwd: str, *, the_command: bool = False
    ) -> bool:
        """Starts `command` as `self.process`, in a process group of its own (a cancel reaches
        all it starts): the run's command (`the_command`: the prompt on a pipe to its stdin,
        stderr apart), or a step before it (a setup command, a git command of the checkout:
        stdin empty, stderr with stdout). A string runs through /bin/sh. False, and nothing
        started, when the run ended meanwhile (cancelled, lease lost, the runner stopping)."""
        self._take_beats()  # a cancel or follow-ups that came while it was prepared
        with self._lock:
            if self.lost or self.cancelled or self.stop_requested.is_set():
                return False
            # the operator's command line and the factory's setup lines run through the shell,
            # as they were written
            self.process = subprocess.Popen(  # noqa: S603
                command,
                shell=isinstance(command, str),
                stdin=subprocess.PIPE if the_command else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if the_command else subprocess.STDOUT,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
            self.command_started = the_command
        return True

    def _step(
        self, command: str | list[str], env: dict[str, str], cwd: str
    ) -> tuple[int, str] | None:
        """A step before the command, run to its end: its exit status and its output; None
        when it did not start (the run ended). A program that cannot be started (git missing)
        is a step that failed, as the shell says it: exit 127."""
        try:
            if not self._start(command, env, cwd):
                return None
        except OSError as exc:
            return 127, f"{exc}\n"
        assert self.process is not None
        output = Output()
        pump = _pump(self.process.stdout, output)
        code = self._watch()
        pump.join(KILL_AFTER_S)
        return code, output.text()

    def _setup(self, workdir: str, env: dict[str, str]) -> None:
        """The runner file's setup commands, in order, in the working directory, with the
        command's environment; the first that fails stops them (`setup_failed`)."""
        commands = (self.config.get("runner_config") or {}).get("setup_commands") or []
        for i, command in enumerate(commands, 1):
            done = self._step(command, env, workdir)
            if done is None:
                return
            code, output = done
            ended = how_it_ended(code)
            self.prepared.transcript += f"$ {command}  # setup {i} of {len(commands)}\n{output}"
            self.prepared.transcript += f"\n--- setup {i}: {ended} ---\n"
            if code != 0:
                failed = f"setup command {i} of {len(commands)} failed ({ended}): {command}"
                self.prepared.fail(SETUP_FAILED, failed)
                return

    def _checkout(self, workdir: str) -> None:
        """`--checkout`: the repository the run's event names (else its factory's first) cloned
        into the working directory at the event's ref (`checkout_failed` when it is not)."""
        assert self.checkout is not None
        payload: Any = None
        if self.payload_path is not None:
            try:
                payload = json.loads(self.payload_path.read_bytes())
            except ValueError:
                payload = None  # not JSON: it names no repository
        target = target_of(payload, self.config.get("repositories"))
        if target is None:
            return
        url = self.checkout.clone_url(target)
        token, whose = self.checkout.token, CHECKOUT_TOKEN
        credential = self.run.get("checkout_credential")
        if credential and credential_fits(credential, target.provider, target.full_name):
            token, whose = credential["token"], CONNECTION_TOKEN
        for value in header_values(token, target.provider):
            self.masks.append((value, whose))
        env = git_environment(_base_environment(), target, url, token)
        with_what = "without a token"
        if token and sends_token(url):
            with_what = (
                "with the connection's token" if whose == CONNECTION_TOKEN else f"with {whose}"
            )
        self.prepared.transcript += (
            f"--- checkout: {target.describe()} from {url}, {with_what} ---\n"
        )
        for ways in git_steps(target, url, self.checkout.depth):
            for way in ways:
                done = self._step(way, env, workdir)
                if done is None:
                    return
                code, output = done
                self.prepared.transcript += f"$ {' '.join(way)}\n{output}"
                if code == 0:
                    break
                self.prepared.transcript += f"--- {how_it_ended(code)} ---\n"
            else:
                failed = f"checkout of {target.describe()} failed ({how_it_ended(code)}): {url}"
                self.prepared.fail(CHECKOUT_FAILED, failed)
                return
        exclude = Path(workdir) / ".git" / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a", encoding="utf-8") as out:  # the runner's files are not the work's
            out.write("# gateway runner\n" + "".join(f"{each}\n" for each in RUNNER_FILES))
        self.prepared.transcript += "--- checkout done ---\n"

    def _not_started(self, elapsed: float) -> Ended | None:
        """The run ended before its command started: given back or up, cancelled, or failed
        preparing (event payload, checkout, setup)."""
        prepared = self.prepared
        if self.lost:
            return None
        if self.stop_requested.is_set() and not self.cancelled:
            self._report("release", partial(self.client.release, self.run_id, "its runner stopped"))
            return None
        if self.cancelled:
            ending = Ending(run_id=self.run_id, outcome="CANCELLED", status_message="cancelled")
            ending["transcript"] = _cap(self.mask(prepared.transcript) + CANCELLED_BEFORE_START)
            return Ended(self.run_id, ending, f"CANCELLED in {elapsed:.1f} s (before the start)")
        assert prepared.failed is not None and prepared.error_code is not None
        ending = Ending(
            run_id=self.run_id,
            outcome="FAILED",
            transcript=_cap(self.mask(prepared.transcript)),
            status_message=self.mask(prepared.failed)[:MAX_STATUS],
            error_code=prepared.error_code,
        )
        return Ended(self.run_id, ending, f"FAILED in {elapsed:.1f} s ({prepared.error_code})")

    def mask(self, text: str) -> str:
        """`text` with every secret value of the run (of MIN_MASKED characters or more)
        replaced by `[secret NAME]`."""
        for value, name in self._masked():
            text = text.replace(value, f"[secret {name}]")
        return text

    def mask_bytes(self, data: bytes) -> bytes:
        """`mask` for a file's bytes (each value as UTF-8), whatever the file holds."""
        for value, name in self._masked():
            data = data.replace(value.encode(), f"[secret {name}]".encode())
        return data

    def _masked(self) -> list[tuple[str, str]]:
        """(value, name) of what is masked, longest first (a value inside another is masked
        as the longer one)."""
        found = [(value, name) for name, value in self.secrets.items()] + self.masks
        return sorted(
            ((value, name) for value, name in found if len(value) >= MIN_MASKED),
            key=lambda item: -len(item[0]),
        )

    def _environment(self, workdir: Path) -> dict[str, str]:
        env = _base_environment()
        env.update(
            RUN_ID=self.run_id,
            RUN_TITLE=self.run["title"] or "",
            RUN_MODE=self.run["mode"] or "normal",
            GATEWAY_API_URL=self.client.api.removesuffix("/api/v1"),
        )
        self.attachments_dir = workdir / "attachments"
        self.attachments_dir.mkdir()
        env["RUN_ATTACHMENTS"] = str(self.attachments_dir)
        for file in self.run.get("attachments", []):
            self._download(file)
        self.messages_file = workdir / "messages.jsonl"
        self._append_messages(self.run["messages"])
        env["RUN_MESSAGES"] = str(self.messages_file)
        outputs = workdir / "outputs"
        outputs.mkdir()
        env["RUN_OUTPUTS"] = str(outputs)
        if self.run["event_payload"]:
            path = workdir / "event-payload.json"
            try:
                path.write_bytes(self.client.event_payload(self.run_id))
            except ApiError as exc:
                self._payload_unavailable(exc)
            else:
                self.payload_path = path
                env["EVENT_PAYLOAD"] = str(path)
        env.update(self._configuration(workdir / ".run"))
        return env

    def _payload_unavailable(self, exc: ApiError) -> None:
        """A lost lease gives the run up; any other failure ends it FAILED, saying why."""
        if exc.code == "lease_lost":
            self._lose(exc)
        else:
            message = f"the event payload could not be fetched: {exc}"
            self.prepared.fail(EVENT_PAYLOAD_UNAVAILABLE, message)
            self.prepared.transcript += f"--- {message} ---\n"

    def _configuration(self, into: Path) -> dict[str, str]:
        """What the run's resolved configuration gives the command: RUN_AGENT, RUN_MODEL,
        RUN_HARNESS, RUN_SKILLS, RUN_MCP_CONFIG, RUN_CONTEXT (files under `into`) and a
        variable per secret."""
        into.mkdir()
        config = self.config
        env: dict[str, str] = {}
        agent = config.get("agent") or {}
        if agent.get("name"):
            env["RUN_AGENT"] = str(agent["name"])
        harness = config.get("harness") or {}
        model = harness.get("model_id") or harness.get("model") or config.get("model_id")
        if model:
            env["RUN_MODEL"] = str(model)
        if harness.get("type") and harness["type"] != "oz":
            env["RUN_HARNESS"] = str(harness["type"])
        self.skills_dir = into / "skills"
        self.skills_dir.mkdir()
        for skill in config.get("skill_documents") or []:
            write_skill(self.skills_dir.joinpath(*skill_parts(skill["name"])), skill)
        env["RUN_SKILLS"] = str(self.skills_dir)
        mcp = into / "mcp.json"
        mcp.write_text(json.dumps({"mcpServers": config.get("mcp_servers") or {}}, indent=2))
        env["RUN_MCP_CONFIG"] = str(mcp)
        # a variable per secret the run names (the harness's key is the harness's variables')
        named = config.get("secrets")
        own = [name for name in named or [] if name in self.secrets] if named else []
        variables = secret_variables(own)
        for name, variable in variables.items():
            env[variable] = self.secrets[name]
        keyed = harness_key_variables(harness, self.secrets)
        for variable, name in keyed:
            env[variable] = self.secrets[name]
        listed = [(name, variable) for name, variable in variables.items()]
        listed += [(name, variable) for variable, name in keyed]
        context = into / "context.json"
        context.write_text(json.dumps(self._context(listed, mcp), indent=2))
        env["RUN_CONTEXT"] = str(context)
        return env

    def _context(self, variables: list[tuple[str, str]], mcp: Path) -> dict[str, Any]:
        """RUN_CONTEXT's document (gateway.platform.runners.models.RunContext)."""
        run = self.run
        fields = ("run_id", "title", "prompt", "source", "mode", "attempt", "conversation_id")
        return {
            "version": 1,
            "run": {
                **{name: run[name] for name in fields},  # type: ignore[literal-required]
                "factory_uid": run["factory_uid"],
                "metadata": run["metadata"],
                "session": run.get("session", "run"),
            },
            "config": run.get("agent_config"),
            "secrets": [{"name": name, "env": env} for name, env in variables],
            "skills_dir": str(self.skills_dir),
            "mcp_config": str(mcp),
        }

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
            artifact = FileArtifact(  # masked as the transcript is
                artifact_type="FILE",
                filename=self.mask(path.name),
                filepath=self.mask(name),
                mime_type=mimetypes.guess_type(path.name)[0] or "application/octet-stream",
                content_base64=base64.b64encode(self.mask_bytes(path.read_bytes())).decode(),
            )
            self._report("artifacts", partial(self.client.upload, self.run_id, artifact))
        if len(files) > MAX_OUTPUTS:
            log.warning("run %s: %d files in RUN_OUTPUTS, the first %d uploaded", self.run_id,
                        len(files), MAX_OUTPUTS)  # fmt: skip

    def _watch(self) -> int:
        """Waits for the command (or a setup command); acts on what the heartbeats bring
        (cancel, interrupt, follow-ups) and on the runner's shutdown. A lost lease terminates
        it (`_lose`)."""
        assert self.process is not None
        while True:
            try:
                return self.process.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
            if self.stop_requested.is_set() and not self.cancelled:
                log.info("run %s: the runner is stopping; terminating the command", self.run_id)
                self._terminate()
                return self.process.wait()
            self._take_beats()

    def _take_beats(self) -> None:
        """Acts on the heartbeats answered since the last look. Before the command started,
        follow-ups join its stdin too, and an interrupt has nothing to interrupt; a cancel
        terminates what runs (a setup command, or the command), and the command never starts."""
        while True:
            try:
                beat = self.beats.get_nowait()
            except queue.Empty:
                return
            running = self.process is not None and self.process.poll() is None
            if beat["messages"]:
                self._append_messages(beat["messages"])
                if not self.command_started:
                    self.run["messages"].extend(beat["messages"])
            if beat["cancel_requested"] and not self.cancelled:
                self.cancelled = True
                if running:
                    log.info("run %s: cancelled; terminating the command", self.run_id)
                    self._terminate()
                else:
                    log.info("run %s: cancelled before its command started", self.run_id)
            elif beat["interrupt_requested"] and running and self.command_started:
                log.info("run %s: interrupted; SIGINT to the command", self.run_id)
                self._signal(signal.SIGINT)

    def _download(self, file: AttachmentFile) -> None:
        """The file into RUN_ATTACHMENTS (once), its `path` noted; a failure is logged and the
        file left out (the command sees no path for it)."""
        assert self.attachments_dir is not None
        name = _safe_name(file["name"] or file["attachment_id"])
        path = self.attachments_dir / _safe_name(file["attachment_id"]) / name
        if not path.exists():
            try:
                content = self.client.download(file["download_url"])
            except ApiError as exc:
                log.warning("run %s: attachment %s not fetched: %s", self.run_id,
                            file["attachment_id"], exc)  # fmt: skip
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        file["path"] = str(path)

    def _append_messages(self, messages: list[RunMessage]) -> None:
        assert self.messages_file is not None
        for message in messages:
            for file in message.get("files", []):
                self._download(file)
        with self.messages_file.open("a", encoding="utf-8") as out:
            out.writelines(json.dumps(message) + "\n" for message in messages)

    def _report(self, action: str, call: Callable[[], T]) -> T | None:
        """One protocol call about the run; a lost lease ends the command (another runner
        may have the run now), other failures are logged and retried at the next beat."""
        try:
            return call()
        except ApiError as exc:
            if exc.code == "lease_lost":
                self._lose(exc)
            elif not self.lost:
                log.warning("run %s: %s failed: %s", self.run_id, action, exc)
            return None

    def _lose(self, exc: ApiError) -> None:
        """The run is not this runner's any more (another runner may have it now): what runs
        is terminated (the command never starts), and nothing is reported of the run."""
        with self._lock:
            if self.lost:
                return
            self.lost = True
            if self.process is not None and self.process.poll() is None:
                log.warning("run %s: lease lost (%s); abandoning the command", self.run_id, exc)
                self._terminate()
            else:
                log.warning("run %s: lease lost (%s); given up", self.run_id, exc)

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

    def _finish(
        self, code: int, stdout: str, stderr: str, elapsed: float, setup: str = ""
    ) -> Ended | None:
        if self.lost:
            return None
        if self.stop_requested.is_set() and not self.cancelled:
            self._report("release", partial(self.client.release, self.run_id, "its runner stopped"))
            log.info("run %s: given back to the queue", self.run_id)
            return None
        ended = how_it_ended(code)
        if self.cancelled:
            ended = f"cancelled, {ended}"
        stdout, stderr = self.mask(stdout), self.mask(stderr)
        transcript = _cap(self.mask(setup) + _transcript(self.command, ended, stdout, stderr))
        outcome: Outcome
        error_code: str | None
        if self.cancelled:
            outcome, message, error_code = "CANCELLED", "cancelled", None
        elif code == 0:
            outcome, message, error_code = "SUCCEEDED", _last_line(stdout), None
        else:
            outcome = "FAILED"
            message = _last_line(stdout) or f"the command ended with {ended}"
            error_code = f"signal_{-code}" if code < 0 else f"exit_{code}"
        ending = Ending(run_id=self.run_id, outcome=outcome, transcript=transcript)
        if message:
            ending["status_message"] = message
        if error_code:
            ending["error_code"] = error_code
        return Ended(self.run_id, ending, f"{outcome} in {elapsed:.1f} s ({ended})")


def _base_environment() -> dict[str, str]:
    """The runner's environment less its credentials (the runner key, the checkout token):
    what the command and git start from."""
    env = dict(os.environ)
    for credential in ("GATEWAY_RUNNER_KEY", CHECKOUT_TOKEN):
        env.pop(credential, None)
    return env


def _pump(stream: IO[bytes] | None, into: Output) -> threading.Thread:
    def read() -> None:
        assert stream is not None
        for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
            into.chunks.append(chunk.decode(errors="replace"))
        stream.close()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def stdin_text(run: ClaimedRun, skills_dir: Path | None = None) -> str:
    """The composed prompt: the agent's base prompt, the skills it may use (each one's name,
    description and SKILL.md under `skills_dir`), then the run's prompt, each under a header
    line when there is more than the run's prompt; then each follow-up sent to the run so far
    under a header line (docs/runners.md#the-prompt-on-stdin)."""
    config: dict[str, Any] = dict(run.get("agent_config") or {})
    parts = []
    base = config.get("base_prompt")
    if isinstance(base, str) and base.strip():
        parts.append(f"--- agent: {(config.get('agent') or {}).get('name', '')} ---\n")
        parts.append(base.rstrip("\n") + "\n\n")
    skills = config.get("skill_documents") or []
    if isinstance(skills, list) and skills:
        parts.append("--- skills ---\n")
        parts.append("Skills you may use; read a skill's SKILL.md before you follow it:\n")
        for skill in skills:
            where = Path(skills_dir or "$RUN_SKILLS").joinpath(*skill_parts(skill["name"]))
            about = f": {skill['description']}" if skill.get("description") else ""
            parts.append(f"- {skill['name']}{about} ({where / 'SKILL.md'})\n")
        parts.append("\n")
    if parts:
        parts.append("--- task ---\n")
    parts.append(run["prompt"])
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


def _safe_name(name: str) -> str:
    """A file name that stays inside its directory."""
    kept = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:200].lstrip(".")
    return kept or "file"


def _last_line(stdout: str) -> str:
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    return lines[-1][:MAX_STATUS] if lines else ""


def how_it_ended(code: int) -> str:
    """ "exit 3", or "signal 15 (SIGTERM)" for a command a signal ended (Popen's negative
    returncode), as its error_code says it: `exit_<status>`, `signal_<n>`."""
    if code >= 0:
        return f"exit {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"
    return f"signal {-code} ({name})"


def _transcript(command: str, ended: str, stdout: str, stderr: str) -> str:
    text = f"$ {command}\n{stdout}"
    if stderr:
        text += f"\n--- stderr ---\n{stderr}"
    return text + f"\n--- {ended} ---\n"


def _cap(text: str) -> str:
    return text if len(text) <= MAX_TRANSCRIPT else "[...]\n" + text[-MAX_TRANSCRIPT:]


def secret_variables(names: list[str]) -> dict[str, str]:
    """The environment variable of each secret: its name, every character other than an ASCII
    letter, digit or `_` made `_`, and `_` put first when it starts with a digit; a name whose
    variable an earlier name took is left out (docs/runners.md#secrets)."""
    found: dict[str, str] = {}
    for name in names:
        variable = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
        if not variable or variable[0].isdigit():
            variable = "_" + variable
        if variable not in found.values():
            found[name] = variable
    return found


def credential_fits(credential: Any, provider: str, full_name: str) -> bool:
    """Whether the claim's checkout credential is for the repository being cloned (the forges'
    names are case-insensitive): one for another is not used, the runner's token is."""
    return (
        isinstance(credential, dict)
        and isinstance(credential.get("token"), str)
        and bool(credential["token"])
        and credential.get("provider") == provider
        and str(credential.get("repository", "")).lower() == full_name.lower()
    )


def harness_key_variables(harness: Any, secrets: dict[str, str]) -> list[tuple[str, str]]:
    """(variable, secret name) for a harness whose key is a managed secret
    (`harness.auth`: `source: managedSecret`, `secret_name`): the variables its CLI reads its
    key from (HARNESS_KEYS); none when the run has no such secret's value, or when the key is
    the worker's own (`workerEnvironment`: the runner's environment, left as it is)."""
    if not isinstance(harness, dict):
        return []
    auth = harness.get("auth") or {}
    name = auth.get("secret_name")
    if auth.get("source") != "managedSecret" or name not in secrets:
        return []
    return [(variable, name) for variable in HARNESS_KEYS.get(str(harness.get("type")), ())]


def write_skill(directory: Path, skill: dict[str, Any]) -> None:
    """A skill's SKILL.md and its other files (`files`, paths under its directory; one that
    would leave it is left out) into `directory`; a file opening with `#!` is made executable
    (the tree holds text, not file modes)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(skill["content"], encoding="utf-8")
    for file in skill.get("files") or []:
        parts = str(file["path"]).split("/")
        if any(part in ("", ".", "..") for part in parts) or parts == ["SKILL.md"]:
            continue
        path = directory.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(file["content"], encoding="utf-8")
        if file["content"].startswith("#!"):
            path.chmod(0o755)


def skill_parts(name: str) -> list[str]:
    """A skill's directory under RUN_SKILLS: its name's segments, each a safe file name."""
    return [_safe_name(part) for part in name.split("/") if part not in ("", ".", "..")] or [
        "skill"
    ]
