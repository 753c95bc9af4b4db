"""The runner protocol over HTTP, with the standard library only (urllib): one blocking call per
method, JSON in and out (gateway.platform.runner.protocol). Calls are made from the runner's
threads.

A long-poll (a claim that waits for queued runs) can be cut short from another thread
(`stop_waiting`): a stopping runner does not sit out the rest of the wait. The API rolls back a
claim whose caller hung up, so no run is left held by a runner that is gone."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from gateway.platform.runner.protocol import (
    Ending,
    FileArtifact,
    FinishedAndClaimed,
    Heartbeat,
    Registered,
)

TIMEOUT_S = 30.0  # a call's own time limit, beyond a claim's long-poll
Body = Mapping[str, object]


class ApiError(Exception):
    """The API answered with an error status (or could not be reached: status 0)."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code


class RunnerClient:
    def __init__(self, api_url: str, key: str) -> None:
        if not api_url.startswith(("http://", "https://")):
            raise ValueError(f"GATEWAY_API_URL: expected an http(s) URL, got {api_url!r}")
        self.api = api_url.rstrip("/") + "/api/v1"
        self._headers = {
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "User-Agent": "gateway-runner",
        }
        self.runner_uid = ""
        self._waits = LongPolls()
        self._calls = urllib.request.build_opener()
        # the same handlers (proxies from the environment included), tracking each connection
        self._long_polls = urllib.request.build_opener(
            _TrackedHTTP(self._waits), _TrackedHTTPS(self._waits)
        )

    def stop_waiting(self) -> None:
        """Cuts the long-polls in flight short (they fail as unreachable) and refuses new ones."""
        self._waits.cut()

    def register(
        self,
        *,
        name: str,
        host: str | None = None,
        factory_uid: str | None = None,
        concurrency: int = 1,
        version: str | None = None,
        worker_id: str | None = None,
    ) -> Registered:
        spec = {
            "name": name,
            "host": host,
            "factory_uid": factory_uid,
            "concurrency": concurrency,
            "version": version,
            "worker_id": worker_id,
        }
        answer: Registered = json.loads(self._request("/runner/register", spec))
        self.runner_uid = answer["runner_uid"]
        return answer

    def finish_and_claim(
        self, endings: list[Ending], claim: int, wait_s: float
    ) -> FinishedAndClaimed:
        """POST /runner/finish: finishes the runs of `endings`, then claims up to `claim` runs,
        long-polling up to `wait_s` when none is queued. A run not finished has its `problem`
        in the answer."""
        body = {"runs": endings, "claim": claim, "wait_s": wait_s}
        answer: FinishedAndClaimed = self._held_call("/runner/finish", body, wait_s)
        return answer

    def heartbeat(self, run_id: str) -> Heartbeat:
        answer: Heartbeat = self.on(run_id, "heartbeat")
        return answer

    def progress(self, run_id: str, state: str, status_message: str) -> None:
        self.on(run_id, "progress", state=state, status_message=status_message)

    def upload(self, run_id: str, artifact: FileArtifact) -> None:
        self.on(run_id, "artifacts", **artifact)

    def release(self, run_id: str, reason: str) -> None:
        """Gives the run back to the queue (QUEUED, for another runner)."""
        self.on(run_id, "release", reason=reason)

    def on(self, run_id: str, action: str, **body: object) -> Any:
        """POST /runner/runs/{run_id}/{action} (heartbeat, progress, finish, release, ...):
        the answer's JSON."""
        return self._held_call(f"/runner/runs/{run_id}/{action}", body)

    def event_payload(self, run_id: str) -> bytes:
        return self._request(
            f"/runner/runs/{run_id}/event-payload", {"runner_uid": self.runner_uid}
        )

    def download(self, url: str) -> bytes:
        """An attachment's content from its signed URL (which needs no credentials: none are
        sent)."""
        if not url.startswith(("http://", "https://")):
            raise ApiError(0, "invalid_url", f"not an http(s) URL: {url!r}")
        request = urllib.request.Request(url, headers={"User-Agent": "gateway-runner"})  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310
                data: bytes = response.read()
                return data
        except urllib.error.HTTPError as exc:
            raise _api_error(exc) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ApiError(0, "unreachable", str(exc)) from None

    def _held_call(self, path: str, body: Body, wait_s: float = 0.0) -> Any:
        """A call about runs this runner holds: the answer's JSON."""
        return json.loads(self._request(path, {"runner_uid": self.runner_uid, **body}, wait_s))

    def _request(self, path: str, body: Body, wait_s: float = 0.0) -> bytes:
        request = urllib.request.Request(  # noqa: S310 -- http(s) only, checked in __init__
            self.api + path, data=json.dumps(body).encode(), headers=self._headers, method="POST"
        )
        opener = self._long_polls if wait_s > 0 else self._calls
        try:
            with opener.open(request, timeout=TIMEOUT_S + wait_s) as response:
                data: bytes = response.read()
                return data
        except urllib.error.HTTPError as exc:
            raise _api_error(exc) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ApiError(0, "unreachable", str(exc)) from None


def _api_error(exc: urllib.error.HTTPError) -> ApiError:
    try:
        problem = json.loads(exc.read())
        return ApiError(exc.code, problem.get("code", "error"), problem.get("detail", ""))
    except (ValueError, OSError):
        return ApiError(exc.code, "error", exc.reason or "")


class LongPolls:
    """The connections of the calls in flight that wait, so that `cut` can end them: shutting a
    socket down wakes the thread blocked reading it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: set[http.client.HTTPConnection] = set()
        self._cut = False

    def track(self, connection: http.client.HTTPConnection) -> http.client.HTTPConnection:
        with self._lock:
            if self._cut:
                raise OSError("the runner is stopping: no more waiting")
            self._open.add(connection)
        return connection

    def forget(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            self._open.discard(connection)

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            connections = list(self._open)
        for connection in connections:
            sock = connection.sock
            if sock is not None:
                with contextlib.suppress(OSError):  # closed meanwhile
                    sock.shutdown(socket.SHUT_RDWR)


class _TrackedHTTP(urllib.request.HTTPHandler):
    def __init__(self, polls: LongPolls) -> None:
        super().__init__()
        self.polls = polls

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return _open_tracked(self, self.polls, http.client.HTTPConnection, req)


class _TrackedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, polls: LongPolls) -> None:
        super().__init__()
        self.polls = polls

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        context = self._context  # type: ignore[attr-defined]
        return _open_tracked(self, self.polls, http.client.HTTPSConnection, req, context=context)


def _open_tracked(
    handler: urllib.request.AbstractHTTPHandler,
    polls: LongPolls,
    kind: type[http.client.HTTPConnection],
    req: urllib.request.Request,
    **options: Any,
) -> http.client.HTTPResponse:
    made: list[http.client.HTTPConnection] = []

    def connection(host: str, **kwargs: Any) -> http.client.HTTPConnection:
        made.append(polls.track(kind(host, **kwargs)))
        return made[-1]

    try:
        return handler.do_open(connection, req, **options)
    finally:
        for each in made:
            polls.forget(each)
