"""Attachments: prepared for follow-ups, keyed by conversation (for its newest top-level run) or
by run (spec 4.7, 4.8), each with a signed upload URL; the upload itself, and the download of an
attachment's content through a signed URL (docs/runs-and-tasks.md, "Attachments")."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.decoding import read_capped
from gateway.foundation.api.routing import Body, Routes
from gateway.kernel.errors import NotFound
from gateway.platform.runs.attachments import files as attachments
from gateway.platform.runs.attachments.models import (
    AttachmentsPrepare,
    PreparedAttachments,
    UploadedAttachment,
)
from gateway.platform.runs.attachments.signed_urls import (
    DOWNLOAD_PATH,
    UPLOAD_PATH,
    AttachmentLinks,
)
from gateway.platform.runs.record.store import RUN_ERRORS, addressed_run

routes = Routes("runs")
PREPARE_NOTES = (
    "Each attachment comes with `upload`: PUT its bytes there (no credentials; the Content-Type "
    "prepared, at most max_bytes, before expires_at); a follow-up may name it once uploaded."
)


def attachment_links(request: Request) -> AttachmentLinks:
    """Signed attachment URLs on the address the caller reached this gateway at."""
    return AttachmentLinks(services_of(request).secret_box, str(request.base_url).rstrip("/"))


@routes.post(
    "/agent/conversations/{conversation_id}/attachments/prepare",
    "Prepare attachments for the newest run",
    response=PreparedAttachments,
    body_required=False,
    errors=(*RUN_ERRORS, 413),
    notes=PREPARE_NOTES,
)
async def conversation_prepare_endpoint(
    request: Request, body: Body[AttachmentsPrepare]
) -> PreparedAttachments:
    return await _prepare(request, body)


@routes.post(
    "/agent/runs/{run_id}/attachments/prepare",
    "Prepare attachments for this run",
    response=PreparedAttachments,
    body_required=False,
    errors=(*RUN_ERRORS, 413),
    notes=f"{PREPARE_NOTES} The ids are valid for follow-ups to this run. A follow-up addressed "
    "to the conversation goes to its newest run, and refuses ids prepared for an older one (422 "
    "`unknown_attachment`).",
)
async def run_prepare_endpoint(
    request: Request, body: Body[AttachmentsPrepare]
) -> PreparedAttachments:
    return await _prepare(request, body)


async def _prepare(request: Request, body: Body[AttachmentsPrepare]) -> PreparedAttachments:
    """Attachments prepared for the addressed run (its run_id, or its conversation's newest)."""
    principal = await principal_of(request)
    files = await body.read()
    services = services_of(request)
    async with services.database.transaction() as conn:
        run = await addressed_run(conn, principal, request.path_params)
        return await attachments.prepare(
            conn, run, files, services.settings.attachments, attachment_links(request)
        )


@routes.put(
    UPLOAD_PATH.removeprefix("/api/v1") + "{token}",
    "Upload a prepared attachment's content",
    response=UploadedAttachment,
    errors=(400, 404, 409, 413, 415),
    public=True,
    problems=(
        (404, "`not_found`: the upload URL is unknown or expired"),
        (409, "`attachment_uploaded`: its content was uploaded already"),
        (415, "`unsupported_media_type`: not the Content-Type prepared"),
    ),
    notes="The body is the attachment's bytes as they are (not JSON), with the Content-Type "
    "prepared; the URL (from prepare) is the credential.",
)
async def upload_endpoint(request: Request) -> UploadedAttachment:
    grant = attachment_links(request).read_upload(request.path_params["token"])
    if grant is None:
        raise NotFound("token: unknown or expired upload URL; prepare the attachment again")
    media_type = request.headers.get("content-type", "").split(";")[0].strip()
    content = await read_capped(request, grant.max_bytes)
    services = services_of(request)
    return await attachments.upload(services.database, services.blobs, grant, media_type, content)


@routes.get(
    DOWNLOAD_PATH.removeprefix("/api/v1") + "{token}",
    "An attachment's content, through a signed URL",
    response=str,
    media_type="application/octet-stream",
    errors=(404,),
    public=True,
    notes="The download_url a runner is handed for each attachment of its run; 404 once it "
    "expired. Answers with the attachment's own content type.",
)
async def content_endpoint(request: Request) -> Response:
    attachment_id = attachment_links(request).read_download(request.path_params["token"])
    if attachment_id is None:
        raise NotFound("token: unknown or expired download URL")
    services = services_of(request)
    found = await attachments.content(services.database, services.blobs, attachment_id)
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in found.name or attachment_id)
    return Response(
        found.data,
        media_type=found.content_type,
        headers={
            # a download, never a page: uploaded text/html must not run on this origin
            "content-disposition": f'attachment; filename="{name[:200]}"',
            "x-content-type-options": "nosniff",
            "cache-control": "private, max-age=300",
        },
    )
