"""What runs leave behind, for their readers: artifacts (details, download through a short-lived
signed URL), the transcript, the timeline, reported usage; and the team's runners (self-hosted
workers, presence from heartbeats). docs/runs-and-tasks.md."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from msgspec import Meta, Struct
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gateway.api.auth import principal_of, services_of
from gateway.api.fields import Timestamp
from gateway.api.http import json_response
from gateway.api.routing import Routes
from gateway.errors import NotFound
from gateway.platform.runners import execution as run_execution
from gateway.platform.runs import timeline as run_timeline
from gateway.platform.runs.records import can_view, visible_run
from gateway.security import SecretBox

SIGNED_URL_S = 300  # how long a download URL works


class ArtifactData(Struct, kw_only=True):
    content_type: str | None = None
    download_url: Annotated[str, Meta(description="signed, works without credentials")] | None = (
        None
    )
    expires_at: Timestamp | None = None
    filename: str | None = None
    filepath: str | None = None
    size_bytes: int | None = None
    description: str | None = None
    title: str | None = None
    url: Annotated[str, Meta(description="PULL_REQUEST: the pull request")] | None = None
    branch: str | None = None
    state: Literal["open", "closed", "merged"] | None = None


class Artifact(Struct, kw_only=True):
    artifact_type: Literal["FILE", "PULL_REQUEST", "TRANSCRIPT"]
    artifact_uid: str
    run_id: str
    created_at: Timestamp
    data: ArtifactData


class TimelineEvent(Struct, kw_only=True):
    state: str
    at: Timestamp
    runner_uid: str | None
    reason: str | None


class Timeline(Struct):
    run_id: str
    events: Annotated[list[TimelineEvent], Meta(description="oldest first; QUEUED at creation")]


class UsageLine(Struct, kw_only=True):
    model_id: str | None
    component: str
    input_tokens: int
    output_tokens: int
    cost_usd: float


class RunUsage(Struct, kw_only=True):
    run_id: str
    input_tokens: int
    output_tokens: int
    cost_usd: float
    components: list[UsageLine]


class Worker(Struct, kw_only=True):
    uid: str
    name: str
    host: str | None
    agent_uid: str
    factory_uid: str | None
    concurrency: int
    version: str | None
    started_at: Timestamp
    last_seen_at: Timestamp
    online: Annotated[bool, Meta(description="seen within one lease (may be briefly stale)")]
    runs_held: int


class Workers(Struct):
    workers: list[Worker]


routes = Routes("runs")
ARTIFACT = "/agent/artifacts/{artifact_uid}"


@routes.get(
    ARTIFACT,
    "Artifact details",
    response=Artifact,
    notes="Files and transcripts come with a signed download_url valid for 5 minutes.",
)
async def artifact_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        row, run = await run_execution.artifact(conn, request.path_params["artifact_uid"])
    if not can_view(principal, run):
        raise NotFound(f"artifact_uid: {row.artifact_uid} not found")
    return json_response(_artifact_json(row, signed_url(request, row.artifact_uid)))


def _artifact_json(row: Any, signed: tuple[str, datetime]) -> dict[str, Any]:
    if row.artifact_type == "PULL_REQUEST":
        data = {"url": row.url, "branch": row.branch, "title": row.title, "state": row.pr_state}
    else:
        url, expires = signed
        data = {
            "content_type": row.mime_type,
            "download_url": url,
            "expires_at": expires,
            "filename": row.filename,
            "filepath": row.filepath or row.filename,
            "size_bytes": row.size,
            "description": row.description,
            "title": row.title,
        }
    return {
        "artifact_type": row.artifact_type,
        "artifact_uid": row.artifact_uid,
        "run_id": row.run_id,
        "created_at": row.created_at,
        "data": {key: value for key, value in data.items() if value is not None},
    }


def signed_url(request: Request, artifact_uid: str) -> tuple[str, datetime]:
    expires = int(time.time()) + SIGNED_URL_S
    token = _box(request).sign(f"{artifact_uid}:{expires}".encode())
    base = str(request.base_url).rstrip("/")
    return f"{base}/api/v1/agent/artifacts/content/{token}", datetime.fromtimestamp(expires, UTC)


def _box(request: Request) -> SecretBox:
    return services_of(request).secret_box


@routes.get(
    f"{ARTIFACT}/download",
    "Download an artifact",
    ok=302,
    errors=(400, 401, 404),
    notes="Redirects to a signed URL valid for 5 minutes (no credentials needed there).",
)
async def download_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        row, run = await run_execution.artifact(conn, request.path_params["artifact_uid"])
    if not can_view(principal, run) or row.content is None:
        raise NotFound(f"artifact_uid: {row.artifact_uid} has nothing to download")
    return RedirectResponse(signed_url(request, row.artifact_uid)[0], status_code=302)


@routes.get(
    "/agent/artifacts/content/{token}",
    "An artifact's content, through a signed URL",
    response=str,
    media_type="application/octet-stream",
    errors=(404,),
    public=True,
    notes="The URL from download_url or a download redirect; 404 once it expired.",
)
async def content_endpoint(request: Request) -> Response:
    data = _box(request).unsign(request.path_params["token"])
    uid, _, expires = (data or b"").decode(errors="replace").partition(":")
    if not expires.isdigit() or int(expires) < time.time():
        raise NotFound("token: unknown or expired download link")
    async with services_of(request).database.read() as conn:
        row, _ = await run_execution.artifact(conn, uid)
    if row.content is None:
        raise NotFound("token: the artifact has no content")
    disposition = f'attachment; filename="{_safe_name(row.filename or "artifact")}"'
    return Response(
        bytes(row.content),
        media_type=row.mime_type or "application/octet-stream",
        headers={"content-disposition": disposition, "cache-control": "private, max-age=300"},
    )


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:200]


RUN = "/agent/runs/{run_id}"


@routes.get(
    f"{RUN}/transcript",
    "The run's transcript",
    ok=302,
    errors=(400, 401, 404),
    notes="Redirects to a signed URL (5 minutes); 404 until the run's runner finished it.",
)
async def transcript_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        run = await visible_run(conn, principal, request.path_params["run_id"])
        row = await run_execution.transcript_of(conn, run.run_id)
    if row is None:
        raise NotFound(f"run_id: run {run.run_id} has no transcript (yet)")
    return RedirectResponse(signed_url(request, row.artifact_uid)[0], status_code=302)


@routes.get(f"{RUN}/timeline", "The run's state changes", response=Timeline)
async def timeline_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        run = await visible_run(conn, principal, request.path_params["run_id"])
        events = await run_timeline.timeline(conn, run)
    return json_response({"run_id": run.run_id, "events": events})


@routes.get(f"{RUN}/usage", "The run's reported usage", response=RunUsage)
async def usage_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        run = await visible_run(conn, principal, request.path_params["run_id"])
        usage = await run_execution.usage_of(conn, run.run_id)
    return json_response(usage)


@routes.get(
    "/agent/workers",
    "Self-hosted workers of the caller's teams",
    response=Workers,
    errors=(400, 401),
    notes="Runners seen within two leases; `online` from their last call (may be a few seconds "
    "stale).",
)
async def workers_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    services = services_of(request)
    async with services.database.read() as conn:
        found = await run_execution.list_runners(conn, principal, services.settings.run_lease_s)
    return json_response({"workers": found})
