"""The runner protocol over HTTP, with the standard library only (urllib): one blocking call per
method, JSON in and out (gateway.runner.protocol). Calls are made from the runner's threads."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from gateway.runner.protocol import (
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

    def register(
        self,
        *,
        name: str,
        host: str | None = None,
        factory_uid: str | None = None,
        concurrency: int = 1,
        version: str | None = None,
    ) -> Registered:
        spec = {
            "name": name,
            "host": host,
            "factory_uid": factory_uid,
            "concurrency": concurrency,
            "version": version,
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

    def _held_call(self, path: str, body: Body, wait_s: float = 0.0) -> Any:
        """A call about runs this runner holds: the answer's JSON."""
        return json.loads(self._request(path, {"runner_uid": self.runner_uid, **body}, wait_s))

    def _request(self, path: str, body: Body, wait_s: float = 0.0) -> bytes:
        request = urllib.request.Request(  # noqa: S310 -- http(s) only, checked in __init__
            self.api + path, data=json.dumps(body).encode(), headers=self._headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S + wait_s) as response:  # noqa: S310
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
