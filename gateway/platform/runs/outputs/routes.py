"""What runs leave behind, for their readers: artifacts (details, download through a short-lived
signed URL), the transcript, the timeline (docs/runs-and-tasks.md). What runners report of usage,
and the runners themselves, are read through runners/read_routes.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Routes
from gateway.kernel.errors import NotFound
from gateway.kernel.security import SecretBox
from gateway.platform.runs.attachments.routes import attachment_links
from gateway.platform.runs.outputs import artifacts
from gateway.platform.runs.outputs.models import ArtifactDetails
from gateway.platform.runs.record import timeline as run_timeline
from gateway.platform.runs.record.models import Timeline
from gateway.platform.runs.record.store import can_view, visible_run

SIGNED_URL_S = 300  # how long a download URL works

routes = Routes("runs")
ARTIFACT = "/agent/artifacts/{artifact_uid}"


@routes.get(
    ARTIFACT,
    "Artifact details",
    response=ArtifactDetails,
    notes="Files and transcripts come with a signed download_url valid for 5 minutes.",
)
async def artifact_endpoint(request: Request) -> ArtifactDetails:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        artifact, run = await artifacts.artifact(conn, request.path_params["artifact_uid"])
    if not can_view(principal, run):
        raise NotFound(f"artifact_uid: {artifact.artifact_uid} not found")
    uid = artifact.artifact_uid
    if artifact.content is None and uid.startswith("att_"):  # in the attachment store
        return ArtifactDetails.of(artifact, attachment_links(request).download(uid))
    return ArtifactDetails.of(artifact, signed_url(request, uid))


def signed_url(request: Request, artifact_uid: str) -> tuple[str, datetime]:
    """A URL of the artifact's content that works without credentials, and when it expires."""
    expires = int(time.time()) + SIGNED_URL_S
    token = _box(request).sign(f"{artifact_uid}:{expires}".encode())
    base = str(request.base_url).rstrip("/")
    return f"{base}/api/v1/agent/artifacts/content/{token}", datetime.fromtimestamp(expires, UTC)


def download_url(request: Request) -> Callable[[str], str]:
    """`signed_url`'s URL, for any artifact uid."""
    return lambda artifact_uid: signed_url(request, artifact_uid)[0]


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
        artifact, run = await artifacts.artifact(conn, request.path_params["artifact_uid"])
    if not can_view(principal, run) or artifact.content is None:
        raise NotFound(f"artifact_uid: {artifact.artifact_uid} has nothing to download")
    return RedirectResponse(signed_url(request, artifact.artifact_uid)[0], status_code=302)


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
        artifact, _ = await artifacts.artifact(conn, uid)
    if artifact.content is None:
        raise NotFound("token: the artifact has no content")
    disposition = f'attachment; filename="{_safe_name(artifact.filename or "artifact")}"'
    return Response(
        artifact.content,
        media_type=artifact.mime_type or "application/octet-stream",
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
        uid = await artifacts.transcript_uid(conn, run.run_id)
    if uid is None:
        raise NotFound(f"run_id: run {run.run_id} has no transcript (yet)")
    return RedirectResponse(signed_url(request, uid)[0], status_code=302)


@routes.get(f"{RUN}/timeline", "The run's state changes", response=Timeline)
async def timeline_endpoint(request: Request) -> Timeline:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        run = await visible_run(conn, principal, request.path_params["run_id"])
        return Timeline(run.run_id, await run_timeline.timeline(conn, run))
