"""`gateway runner` against `gateway serve`, both real processes: a webhook delivery becomes a
run that a real command executes; failures, cancels, a runner killed mid-run, a runner stopped
by SIGTERM, and 200 runs over 4 runners executed exactly once; the runner's calls, counted by a
proxy in front of the server: one POST /runner/finish per run.

The runner protocol is the same whatever the deployment: its tests run on the embedded shape
(SQLite). Claiming is where the stores differ (SQLite's one writer, PostgreSQL's row locks):
the 200 runs are claimed on both supported shapes, embedded and Redis + PostgreSQL."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from gateway.platform.runner.execution import Ended
from gateway.platform.runner.loop import CLAIM_WAIT_S, Runner, RunnerOptions
from testbed.procs import free_port
from tests.ingress.hooks import gateway_env, serve_gateway, stop_gateway
from tests.support import scaled

pytestmark = pytest.mark.slow
# short, so that a killed runner's run moves on quickly; stretched on a loaded host (`scaled`),
# where heartbeats may come late (the runner renews the lease from the claim's answer to the
# finish's; it once did so only while the command ran, and a run whose claim, progress and
# finish took longer than 2 s together was executed a second time by another runner)
LEASE_S = 2.0


@dataclass
class Deployment:
    """A served gateway with a demo team; starts runners and calls the API as its user."""

    url: str
    env: dict[str, str]
    keys: dict[str, Any]
    tmp: Path
    runners: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        # the demo user (one email) is in every demo team of a shared database: pick this one
        headers = {
            "Authorization": f"Bearer {self.keys['user_api_key']}",
            "X-Service-Team-Uid": self.keys["team_uid"],
        }
        return httpx.request(method, f"{self.url}/api/v1{path}", headers=headers, timeout=10,
                             **kwargs)  # fmt: skip

    def runner(self, command: str, *options: str, name: str = "r") -> subprocess.Popen[bytes]:
        env = self.env | {
            "GATEWAY_API_URL": self.url,
            "GATEWAY_RUNNER_KEY": self.keys["agent_api_key"],
        }
        with (self.tmp / f"runner-{name}.log").open("ab") as log:  # the child keeps a copy
            proc = subprocess.Popen(
                [sys.executable, "-m", "gateway", "runner", "--command", command, *options],
                env=env,
                stdout=log,
                stderr=log,
            )
        self.runners.append(proc)
        return proc

    def run(self, run_id: str) -> dict[str, Any]:
        answer = self.api("GET", f"/agent/runs/{run_id}")
        assert answer.status_code == 200, answer.text
        run: dict[str, Any] = answer.json()
        return run

    def new_run(self, prompt: str) -> str:
        answer = self.api("POST", "/agent/runs", json={"prompt": prompt})
        assert answer.status_code == 200, answer.text
        return str(answer.json()["run_id"])

    def states(self, run_id: str) -> list[str]:
        events = self.api("GET", f"/agent/runs/{run_id}/timeline").json()["events"]
        return [event["state"] for event in events]

    def transcript(self, run_id: str) -> str:
        content = self.api("GET", f"/agent/runs/{run_id}/transcript", follow_redirects=True)
        assert content.status_code == 200, content.text  # followed to the signed URL
        return content.text


def wait_for(probe: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    """`probe`'s first truthy value within `timeout` seconds, `scaled` by the host's load."""
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not in {timeout:.0f} s: {what}")


SHAPES = ["embedded", "redis+postgresql"]


@pytest.fixture(params=["embedded"])
def shape(request: pytest.FixtureRequest) -> str:
    """The deployment shape (docs/operations.md); a test parametrizes it to run on others."""
    value: str = request.param
    return value


@pytest.fixture
def deployment(
    shape: str, request: pytest.FixtureRequest, sqlite_store: Callable[..., str], tmp_path: Path
) -> Iterator[Deployment]:
    port = free_port()
    if shape == "embedded":
        stores = {"database_url": sqlite_store("gateway.db")}
    else:
        prefix = f"{request.getfixturevalue('redis_prefix')}:{uuid.uuid4().hex}"
        stores = {
            "database_url": request.getfixturevalue("postgres_url"),
            "redis_url": request.getfixturevalue("redis_url"),
            "redis_prefix": prefix,
        }
    env = gateway_env(
        **stores,
        webhook_base_url=f"http://127.0.0.1:{port}",
        secret_key=base64.urlsafe_b64encode(b"r" * 32).decode(),
        run_lease_s=f"{scaled(LEASE_S):.1f}",
        log_level="warning",
        outbound_allow_private="1",  # the forges' stand-ins (provider APIs) are on loopback
    )
    demo = subprocess.run(
        [sys.executable, "-m", "gateway", "admin", "demo"],
        env=env,
        capture_output=True,
        check=True,
    )
    keys = json.loads(demo.stdout)
    server = serve_gateway(env, port, tmp_path / "server.log")
    deployment = Deployment(f"http://127.0.0.1:{port}", env, keys, tmp_path)
    try:
        yield deployment
    finally:
        for proc in deployment.runners:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
        stop_gateway(server)  # gracefully: it stops its evaluator child too
        for pidfile in tmp_path.glob("*.pid"):  # commands an abandoned runner left behind
            _kill(int(pidfile.read_text().split()[0]))


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def test_a_webhook_delivery_runs_a_real_command_to_succeeded(deployment: Deployment) -> None:
    factory = f"/factory/{deployment.keys['factory_uid']}"
    hook = deployment.api("POST", f"{factory}/webhooks",
                          json={"name": "events", "auth_mode": "url_token"}).json()  # fmt: skip
    trigger = {"provider": "webhook", "event": "received",
               "filter": {"webhook_ids": [hook["uid"]]}}  # fmt: skip
    made = deployment.api("POST", f"{factory}/automations",
                          json={"name": "handle", "prompt": "Handle the event.",
                                "triggers": [trigger]})  # fmt: skip
    assert made.status_code == 201, made.text
    command = (
        'read -r first; echo "prompt starts: $first" >&2; '
        'cp "$EVENT_PAYLOAD" "$RUN_OUTPUTS/seen.json"; '
        'echo "payload: $(cat "$EVENT_PAYLOAD")"; echo "handled $RUN_ID"'
    )
    deployment.runner(command)
    accepted = httpx.post(hook["ingress_url"], json={"action": "opened", "n": 7}, timeout=10)
    assert accepted.status_code == 202, accepted.text
    delivery = f"{factory}/webhooks/{hook['uid']}/deliveries/{accepted.json()['delivery_id']}"
    runs = wait_for(lambda: deployment.api("GET", delivery).json().get("runs"), what="a run")
    run_id = runs[0]["run_id"]
    run = wait_for(lambda: (r := deployment.run(run_id))["state"] == "SUCCEEDED" and r,
                   what="SUCCEEDED")  # fmt: skip
    assert run["status_message"]["message"] == f"handled {run_id}"
    transcript = deployment.transcript(run_id)
    assert 'payload: {"action":"opened","n":7}' in transcript
    assert "prompt starts: Handle the event." in transcript  # stderr, with the prompt from stdin
    assert deployment.states(run_id) == ["QUEUED", "CLAIMED", "INPROGRESS", "SUCCEEDED"]
    names = [(item["artifact_type"], item["data"]["filename"]) for item in run["artifacts"]]
    # the event payload it came with, then its output
    assert names == [("FILE", "event-payload.json"), ("FILE", "seen.json")]
    artifact = run["artifacts"][1]
    assert artifact["data"]["filename"] == "seen.json"
    details = deployment.api("GET", f"/agent/artifacts/{artifact['data']['artifact_uid']}").json()
    assert json.loads(httpx.get(details["data"]["download_url"]).content) == {
        "action": "opened", "n": 7
    }  # fmt: skip
    tasks = deployment.api("GET", f"{factory}/tasks", params={"full_list": "true"}).json()
    outputs = [o for task in tasks["tasks"] for o in task["outputs"]]
    assert [(o["kind"], o["title"]) for o in outputs] == [("file", "seen.json")]


def test_a_runs_end_is_printed_when_the_server_records_it(deployment: Deployment) -> None:
    """The call that reports a run's end does not long-poll for the next run: the runner
    prints the end at once, not when the queue next has a run or CLAIM_WAIT_S has passed."""
    deployment.runner("echo quick")
    log = deployment.tmp / "runner-r.log"
    run_id = deployment.new_run("quick")
    wait_for(lambda: deployment.run(run_id)["state"] == "SUCCEEDED", what="SUCCEEDED")
    printed = f"run {run_id}: "
    wait_for(
        lambda: any(line.split("runner: ", 1)[-1].startswith(printed)
                    for line in log.read_text().splitlines()),
        timeout=CLAIM_WAIT_S / 2,
        what="the runner printing the run's end",
    )  # fmt: skip
    # and the runner still waits for the next run, which it then executes
    second = deployment.new_run("next")
    wait_for(lambda: deployment.run(second)["state"] == "SUCCEEDED", what="the next run")


def test_a_command_printing_100_000_bytes_succeeds_with_its_whole_output(
    deployment: Deployment,
) -> None:
    """The runner sends its finish with the transcript in the same write as the head
    (http.client): over 48 KB, that was once refused as an oversized head (431)."""
    deployment.runner("yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 100000")
    run_id = deployment.new_run("print a lot")
    run = wait_for(lambda: (r := deployment.run(run_id))["state"] in ("SUCCEEDED", "FAILED") and r,
                   what="an end")  # fmt: skip
    assert run["state"] == "SUCCEEDED", run["status_message"]
    assert deployment.states(run_id) == ["QUEUED", "CLAIMED", "INPROGRESS", "SUCCEEDED"]
    line = "0123456789abcdefghijklmnopqrstuvwxyz\n"
    output = line * (100_000 // len(line)) + line[: 100_000 % len(line)]
    assert output in deployment.transcript(run_id)


def test_a_failing_command_fails_the_run(deployment: Deployment) -> None:
    deployment.runner("echo working; echo 'disk full' ; exit 3")
    run_id = deployment.new_run("fail please")
    run = wait_for(lambda: (r := deployment.run(run_id))["state"] == "FAILED" and r,
                   what="FAILED")  # fmt: skip
    assert run["status_message"] == {"message": "disk full", "error_code": "exit_3",
                                     "retryable": False}  # fmt: skip
    assert "--- exit 3 ---" in deployment.transcript(run_id)


def test_cancel_terminates_the_command_within_five_seconds(deployment: Deployment) -> None:
    pidfile = deployment.tmp / "cancel.pid"
    deployment.runner(f"echo $$ > {pidfile}; echo started; exec sleep 60")
    run_id = deployment.new_run("long job")
    wait_for(lambda: deployment.run(run_id)["state"] == "INPROGRESS" and pidfile.exists(),
             what="INPROGRESS")  # fmt: skip
    pid = int(pidfile.read_text())
    cancelled = deployment.api("POST", f"/agent/runs/{run_id}/cancel")
    assert cancelled.status_code == 200 and cancelled.text == run_id
    started = time.monotonic()
    wait_for(lambda: not _alive(pid), timeout=5.0, what="the command terminated")
    assert time.monotonic() - started <= 5.0
    transcript = f"/agent/runs/{run_id}/transcript"
    wait_for(lambda: deployment.api("GET", transcript).status_code == 302,
             what="the cancelled run's transcript")  # fmt: skip
    run = deployment.run(run_id)
    assert run["state"] == "CANCELLED" and run["status_message"]["message"] == "cancelled"
    text = deployment.transcript(run_id)
    assert "started" in text and "--- cancelled, signal 15 (SIGTERM) ---" in text


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by the runner) has stopped running too
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_killed_runner_loses_nothing_its_run_is_executed_again(deployment: Deployment) -> None:
    executions = deployment.tmp / "executions"
    first = deployment.runner(
        f"echo $RUN_ID >> {executions}; echo $$ > {deployment.tmp}/first.pid; exec sleep 60",
        name="first",
    )
    run_id = deployment.new_run("survive a crash")
    wait_for(lambda: executions.exists(), what="the first execution")
    # the command may start before the runner has reported it: killed once it has
    wait_for(lambda: deployment.run(run_id)["state"] == "INPROGRESS", what="INPROGRESS")
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    deployment.runner(f"echo $RUN_ID >> {executions}; echo recovered", name="second")
    run = wait_for(lambda: (r := deployment.run(run_id))["state"] == "SUCCEEDED" and r,
                   timeout=30, what="executed again")  # fmt: skip
    assert run["status_message"]["message"] == "recovered"
    assert executions.read_text().split() == [run_id, run_id]
    assert deployment.states(run_id) == [
        "QUEUED", "CLAIMED", "INPROGRESS", "QUEUED", "CLAIMED", "INPROGRESS", "SUCCEEDED"
    ]  # fmt: skip


def test_sigterm_gives_runs_in_hand_back_after_the_grace_period(deployment: Deployment) -> None:
    pidfile = deployment.tmp / "term.pid"
    runner = deployment.runner(f"echo $$ > {pidfile}; exec sleep 60", "--grace", "1")
    run_id = deployment.new_run("interrupted by a deploy")
    wait_for(lambda: deployment.run(run_id)["state"] == "INPROGRESS" and pidfile.exists(),
             what="INPROGRESS")  # fmt: skip
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(30) == 0
    assert not _alive(int(pidfile.read_text()))
    run = deployment.run(run_id)
    assert run["state"] == "QUEUED"
    assert deployment.states(run_id)[-1] == "QUEUED"


def test_an_idle_runner_stops_without_sitting_out_its_long_poll(deployment: Deployment) -> None:
    runner = deployment.runner("true")
    log = deployment.tmp / "runner-r.log"
    wait_for(lambda: "registered at" in log.read_text(), what="registered")
    time.sleep(0.5)  # its long-poll, CLAIM_WAIT_S long, is in flight now
    runner.send_signal(signal.SIGINT)
    # it used to wait for the long-poll to end (up to CLAIM_WAIT_S); the poll is cut short now
    assert runner.wait(CLAIM_WAIT_S / 2) == 0
    text = log.read_text()
    assert "stopped" in text and "claim failed" not in text
    # nothing was claimed on its behalf as it hung up: a run queued now waits for a runner
    run_id = deployment.new_run("after the stop")
    assert deployment.run(run_id)["state"] == "QUEUED"


@pytest.mark.parametrize("shape", SHAPES)
def test_200_runs_over_4_runners_are_each_executed_exactly_once(deployment: Deployment) -> None:
    executions = deployment.tmp / "executions"
    run_ids = {deployment.new_run(f"job {n}") for n in range(200)}
    for n in range(4):
        deployment.runner(f"echo $RUN_ID >> {executions}; echo ok", "--concurrency", "2",
                          name=f"r{n}")  # fmt: skip

    def succeeded() -> bool:
        done: set[str] = set()
        params: dict[str, Any] = {"state": "SUCCEEDED", "limit": 100}
        while True:
            page = deployment.api("GET", "/agent/runs", params=params).json()
            done |= {run["run_id"] for run in page["runs"]}
            if not page["page_info"]["has_next_page"]:
                return run_ids <= done
            params["cursor"] = page["page_info"]["next_cursor"]

    wait_for(succeeded, timeout=120, what="200 runs SUCCEEDED")
    executed = executions.read_text().split()
    assert sorted(executed) == sorted(run_ids)  # every run once, none twice
    workers = deployment.api("GET", "/agent/workers").json()["workers"]
    assert len([w for w in workers if w["online"]]) == 4


@contextlib.contextmanager
def counting_proxy(
    upstream: str, hold: Callable[[str, str, bytes], None] | None = None
) -> Iterator[tuple[str, Counter[str]]]:
    """An HTTP proxy in front of `upstream` that counts the requests by path; yields its URL
    and the counts (a request counts as it arrives, before it is forwarded). `hold(method,
    path, body)` runs before each request is forwarded (and may hold it back). The Host header
    is passed on: the signed URLs the API answers with lead back through the proxy."""
    counts: Counter[str] = Counter()
    target = urlsplit(upstream)

    class Forward(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.do_POST()

        def do_POST(self) -> None:
            counts[self.path] += 1
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if hold is not None:
                hold(self.command, self.path, body)
            upstream_conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            try:
                headers = dict(self.headers.items())
                upstream_conn.request(self.command, self.path, body=body or None, headers=headers)
                answer = upstream_conn.getresponse()
                content = answer.read()
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
            finally:
                upstream_conn.close()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Forward)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", counts
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_a_busy_runner_makes_one_call_per_run_to_finish_it_and_claim_the_next(
    deployment: Deployment,
) -> None:
    runs = 6
    run_ids = [deployment.new_run(f"job {n}") for n in range(runs)]
    with counting_proxy(deployment.url) as (proxy, counts):
        deployment.url, server = proxy, deployment.url  # the runner talks to the proxy
        deployment.runner("echo ok")
        deployment.url = server
        for run_id in run_ids:
            wait_for(lambda r=run_id: deployment.run(r)["state"] == "SUCCEEDED",
                     what=f"{run_id} SUCCEEDED")  # fmt: skip
        calls = dict(counts)
    finishes = calls.get("/api/v1/runner/finish", 0)
    # the first call claims the first run; then each run's end is reported in the call that
    # claims the next one (the last one's call long-polls); a long-poll that comes back empty
    # may add one more call
    assert runs + 1 <= finishes <= runs + 2, calls
    assert "/api/v1/runner/claim" not in calls, calls
    assert not [path for path in calls if path.endswith("/finish") and "/runs/" in path], calls
    for run_id in run_ids:
        assert deployment.states(run_id) == ["QUEUED", "CLAIMED", "INPROGRESS", "SUCCEEDED"]
        assert deployment.run(run_id)["status_message"]["message"] == "ok"
        assert "--- exit 0 ---" in deployment.transcript(run_id)


def test_a_run_the_finish_call_says_lost_is_logged_and_given_up(
    deployment: Deployment, caplog: pytest.LogCaptureFixture
) -> None:
    runner = Runner(RunnerOptions(deployment.url, deployment.keys["agent_api_key"], "true"))
    runner.client.register(name="lost", concurrency=1)
    run_id = deployment.new_run("lost on the way")
    claimed = runner.client.finish_and_claim([], 1, 5.0)["runs"]
    assert [run["run_id"] for run in claimed] == [run_id]
    # its lease taken away: the run finished by another call meanwhile
    runner.client.on(run_id, "finish", outcome="SUCCEEDED", status_message="first")
    runner.slots.close()  # claims nothing more
    ending = {"run_id": run_id, "outcome": "FAILED", "status_message": "second"}
    with caplog.at_level(logging.INFO, logger="gateway.runner"):
        reported = runner._exchange(
            [Ended(run_id, ending, "FAILED in 0.1 s (exit 1)")], runner.slots.reserve()
        )
    assert reported  # the call itself went through
    assert f"run {run_id}: lease lost (409 lease_lost" in caplog.text
    assert "FAILED in 0.1 s" not in caplog.text
    run = deployment.run(run_id)
    assert run["state"] == "SUCCEEDED" and run["status_message"]["message"] == "first"


def test_the_command_gets_the_follow_ups_and_the_mode(deployment: Deployment) -> None:
    run_id = deployment.new_run("first prompt")
    followups = f"/agent/runs/{run_id}/followups"
    queued = deployment.api("POST", followups, json={"message": "plan it", "mode": "plan"})
    assert queued.status_code == 200 and queued.json()["routing"] == "queued", queued.text
    deployment.runner(
        'cat; echo; echo "mode: $RUN_MODE"; '
        'for i in $(seq 150); do [ "$(wc -l < "$RUN_MESSAGES")" -ge 2 ] && break; sleep 0.2; done; '
        'cat "$RUN_MESSAGES"; echo done'
    )
    wait_for(lambda: deployment.run(run_id)["state"] == "INPROGRESS", what="INPROGRESS")
    live = deployment.api("POST", followups, json={"message": "live note"})
    assert live.status_code == 200 and live.json()["routing"] == "injected", live.text
    wait_for(lambda: deployment.run(run_id)["state"] == "SUCCEEDED", what="SUCCEEDED")
    transcript = deployment.transcript(run_id)
    assert transcript.index("first prompt") < transcript.index("--- follow-up (queued, ")
    assert "plan it" in transcript and "mode: plan" in transcript
    lines = [json.loads(line) for line in transcript.splitlines() if line.startswith('{"id"')]
    assert [(m["message"], m["routing"]) for m in lines] == [
        ("plan it", "queued"),
        ("live note", "injected"),
    ]


def test_the_runs_files_reach_the_command(deployment: Deployment) -> None:
    """A file the run was created with and one a follow-up carries are in RUN_ATTACHMENTS; the
    follow-up's line in RUN_MESSAGES names where its file is."""
    created = deployment.api("POST", "/agent/runs", json={
        "prompt": "read the files", "attachments": [{
            "data": base64.b64encode(b"from the run\n").decode(), "file_name": "first.txt",
            "mime_type": "text/plain"}]})  # fmt: skip
    run_id = created.json()["run_id"]
    prepared = deployment.api(
        "POST", f"/agent/runs/{run_id}/attachments/prepare",
        json={"files": [{"name": "second.txt", "content_type": "text/plain"}]},
    ).json()["attachments"][0]  # fmt: skip
    upload = httpx.put(prepared["upload"]["url"], content=b"from the follow-up\n",
                       headers=prepared["upload"]["headers"], timeout=10)  # fmt: skip
    assert upload.status_code == 200, upload.text
    body = {"message": "and this one", "attachments": [prepared["attachment_id"]]}
    assert deployment.api("POST", f"/agent/runs/{run_id}/followups", json=body).status_code == 200
    deployment.runner('cat "$RUN_ATTACHMENTS"/*/first.txt "$RUN_ATTACHMENTS"/*/second.txt; '
                      'cat "$RUN_MESSAGES"')  # fmt: skip
    run = wait_for(lambda: (r := deployment.run(run_id))["state"] == "SUCCEEDED" and r,
                   what="SUCCEEDED")  # fmt: skip
    transcript = deployment.transcript(run_id)
    assert "from the run\nfrom the follow-up\n" in transcript, run
    line = next(x for x in transcript.splitlines() if x.startswith("{") and "and this one" in x)
    [file] = json.loads(line)["files"]
    assert file["path"].endswith(f"/{prepared['attachment_id']}/second.txt")


def test_a_worker_runs_only_the_runs_pinned_to_it(deployment: Deployment) -> None:
    worker = deployment.runner("echo on the box", "--worker-id", "box-1", name="box")
    wait_for(lambda: any(w["worker_id"] == "box-1" for w in
                         deployment.api("GET", "/agent/workers").json()["workers"]),
             what="the worker registered")  # fmt: skip
    pinned = deployment.api("POST", "/agent/runs", json={"prompt": "p",
                            "config": {"worker_host": "box-1"}}).json()["run_id"]  # fmt: skip
    pooled = deployment.new_run("for the pool")
    run = wait_for(lambda: (r := deployment.run(pinned))["state"] == "SUCCEEDED" and r,
                   what="the pinned run done")  # fmt: skip
    assert run["status_message"]["message"] == "on the box"
    time.sleep(1.0)  # the worker would have claimed the pool's run by now, were it its own
    assert deployment.run(pooled)["state"] == "QUEUED"
    assert worker.poll() is None


# the runner's download and API calls give up after 30 s (gateway.platform.runner.client.TIMEOUT_S)
HOLD_AT_MOST_S = 25.0


@pytest.mark.parametrize("stage", ["download", "finish"])
def test_a_run_held_up_longer_than_its_lease_before_or_after_its_command_runs_once(
    deployment: Deployment, stage: str
) -> None:
    """The lease is renewed from the claim's answer until the finish's: a runner whose
    attachment download (before the command starts) or finish call is held up for longer than
    the lease keeps the run while a second runner polls, and the run is executed once.
    Heartbeats used to start and stop with the command: the lease lapsed, the second runner
    executed the run again and the first one's finish was `lease_lost`."""
    lease_s = float(deployment.env["GATEWAY_RUN_LEASE_S"])
    executions = deployment.tmp / "executions"
    note = base64.b64encode(b"the note\n").decode()
    created = deployment.api("POST", "/agent/runs", json={
        "prompt": "slow to start", "attachments": [
            {"data": note, "file_name": "note.txt", "mime_type": "text/plain"}]})  # fmt: skip
    assert created.status_code == 200, created.text
    run_id = created.json()["run_id"]
    held, go = threading.Event(), threading.Event()

    def hold(method: str, path: str, body: bytes) -> None:
        download = method == "GET" and "/attachments/content/" in path
        finish = path == "/api/v1/runner/finish" and run_id.encode() in body
        if (download if stage == "download" else finish) and not held.is_set():
            held.set()
            go.wait(scaled(60))

    command = f'cat "$RUN_ATTACHMENTS"/*/note.txt; echo $RUN_ID >> {executions}'
    with counting_proxy(deployment.url, hold) as (proxy, _):
        deployment.url, server = proxy, deployment.url  # the first runner talks to the proxy
        deployment.runner(command, name="first")
        deployment.url = server
        try:
            wait_for(held.is_set, what=f"the {stage} held up")
            since = time.monotonic()
            deployment.runner(command, name="second")
            second_log = deployment.tmp / "runner-second.log"
            wait_for(lambda: "registered at" in second_log.read_text(), what="second registered")
            # long enough for the second runner to take a lapsed lease over: it polls the
            # queue a few times a second (the old runner's run was CLAIMED a second time)
            until = min(since + HOLD_AT_MOST_S, time.monotonic() + 2 * lease_s)
            while time.monotonic() < until and deployment.states(run_id).count("CLAIMED") < 2:
                time.sleep(0.2)
        finally:
            go.set()
        first_log = deployment.tmp / "runner-first.log"
        wait_for(lambda: any(f"run {run_id}: {end}" in first_log.read_text()
                             for end in ("SUCCEEDED in", "lease lost")),
                 what="the first runner done with the run")  # fmt: skip
    run = deployment.run(run_id)
    assert run["state"] == "SUCCEEDED", run["status_message"]
    assert run["status_message"]["message"] == "the note"
    assert executions.read_text().split() == [run_id]  # once
    assert deployment.states(run_id) == ["QUEUED", "CLAIMED", "INPROGRESS", "SUCCEEDED"]
    assert "lease lost" not in first_log.read_text()


@pytest.mark.parametrize("sent", ["cancel", "follow-up"])
def test_what_a_heartbeat_brings_before_the_command_starts_counts(
    deployment: Deployment, sent: str
) -> None:
    """While the run's files download, heartbeats bring what users send: a cancel means the
    command never starts (CANCELLED, acknowledged); a follow-up joins its stdin."""
    started = deployment.tmp / "started"
    note = base64.b64encode(b"the note\n").decode()
    created = deployment.api("POST", "/agent/runs", json={
        "prompt": "first prompt", "attachments": [
            {"data": note, "file_name": "note.txt", "mime_type": "text/plain"}]})  # fmt: skip
    run_id = created.json()["run_id"]
    held, go = threading.Event(), threading.Event()

    def hold(method: str, path: str, body: bytes) -> None:
        if method == "GET" and "/attachments/content/" in path and not held.is_set():
            held.set()
            go.wait(scaled(60))

    beats = f"/api/v1/runner/runs/{run_id}/heartbeat"
    with counting_proxy(deployment.url, hold) as (proxy, counts):
        deployment.url, server = proxy, deployment.url
        deployment.runner(f"touch {started}; cat", name="first")
        deployment.url = server
        try:
            wait_for(held.is_set, what="the download held up")
            if sent == "cancel":
                assert deployment.api("POST", f"/agent/runs/{run_id}/cancel").status_code == 200
            else:
                live = deployment.api("POST", f"/agent/runs/{run_id}/followups",
                                      json={"message": "live note"})  # fmt: skip
                assert live.json()["routing"] == "injected", live.text
            # one heartbeat after the one that saw it: that one's answer is in the runner's hands
            after = counts[beats]
            wait_for(lambda: counts[beats] >= after + 2, what="two heartbeats")
        finally:
            go.set()
        log = deployment.tmp / "runner-first.log"
        wait_for(lambda: any(f"run {run_id}: {outcome} in" in log.read_text()
                             for outcome in ("SUCCEEDED", "CANCELLED")),
                 what="the run reported")  # fmt: skip
    run = deployment.run(run_id)
    transcript = deployment.transcript(run_id)
    if sent == "cancel":
        assert run["state"] == "CANCELLED"
        assert not started.exists()
        assert "--- cancelled before the command started ---" in transcript
    else:
        assert run["state"] == "SUCCEEDED"
        assert transcript.index("first prompt") < transcript.index("--- follow-up (injected, ")
        assert "live note" in transcript
