"""Attachments with content: prepared for a run (each with a signed upload URL), uploaded once
(size-capped, the prepared content type only), stored in the attachment store
(gateway/foundation/blobs), and handed to the run's runner as signed download URLs. A webhook run's
event-payload.json is an attachment too; its content is the delivery's payload, stored once in the
delivery log.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.blobs import BlobStore
from gateway.foundation.store import Database
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.attachment_storage import AttachmentStorage
from gateway.kernel.errors import (
    AttachmentUploaded,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from gateway.platform.runs.attachments.models import (
    AttachmentFile,
    AttachmentsPrepare,
    PreparedAttachment,
    PreparedAttachments,
    UploadedAttachment,
    UploadGrant,
)
from gateway.platform.runs.attachments.signed_urls import UPLOAD_URL_S, AttachmentLinks
from gateway.platform.runs.record.models import RunArtifact, RunRecord, file_artifact

a = t.attachments


@dataclass(frozen=True, slots=True)
class NewFile:
    """Content that comes with a request (the files a run is created with)."""

    name: str
    content_type: str
    content: bytes


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A file put into the attachment store, not yet recorded as an attachment."""

    attachment_id: str
    name: str
    content_type: str
    size: int
    blob_key: str

    def artifact(self, at: datetime) -> RunArtifact:
        """Its entry in the run's `artifacts`: a FILE, as a webhook run lists event-payload.json
        (GET /agent/artifacts/{attachment_id} has its details and a download link)."""
        return file_artifact(self.attachment_id, at, self.name, self.content_type, self.size)


def check_media_type(
    storage: AttachmentStorage, media_type: str, field: str, error: type[Exception] = InvalidRequest
) -> str:
    """The media type in lower case; `error` naming `field` when the service does not take it."""
    lowered = media_type.lower()
    if not storage.allows(lowered):
        raise error(f"{field}: {media_type!r} is not a content type the service accepts")
    return lowered


async def prepare(
    conn: AsyncConnection,
    run: RunRecord,
    request: AttachmentsPrepare,
    storage: AttachmentStorage,
    links: AttachmentLinks,
) -> PreparedAttachments:
    """Attachment ids for the run, each with a signed URL its content is uploaded to."""
    now = utcnow()
    expires = (now + timedelta(seconds=UPLOAD_URL_S)).replace(microsecond=0)
    prepared, rows = [], []
    for i, spec in enumerate(request.specs()):
        media_type = check_media_type(storage, spec.content_type, f"files[{i}].content_type")
        if spec.size is not None and spec.size > storage.max_bytes:
            raise InvalidRequest(f"files[{i}].size: more than {storage.max_bytes} bytes")
        attachment_id = ids.new_id("att")
        grant = UploadGrant(
            attachment_id=attachment_id,
            content_type=media_type,
            max_bytes=storage.max_bytes if spec.size is None else spec.size,
            size=spec.size,
            expires_at=expires,
        )
        upload = links.upload(grant)
        prepared.append(
            PreparedAttachment(attachment_id=attachment_id, name=spec.name, upload=upload)
        )
        rows.append(_row(run, attachment_id, spec.name, media_type, now))
    await conn.execute(insert(a), rows)
    return PreparedAttachments(prepared, run.run_id, run.conversation_id)


def _row(
    run: RunRecord, attachment_id: str, name: str | None, media_type: str, now: datetime
) -> dict[str, object]:
    return {
        "attachment_id": attachment_id,
        "conversation_id": run.conversation_id,
        "run_id": run.run_id,
        "file_name": name,
        "content_type": media_type,
        "created_at": now,
    }


async def upload(
    database: Database, blobs: BlobStore, grant: UploadGrant, media_type: str, content: bytes
) -> UploadedAttachment:
    """Stores the content of a prepared attachment, once: the upload must carry the prepared
    content type (415) and, when a size was prepared, exactly that many bytes (400)."""
    if media_type.lower() != grant.content_type:
        raise UnsupportedMediaType(
            f"Content-Type: {media_type or 'none'}; this upload URL takes {grant.content_type}"
        )
    if grant.size is not None and len(content) != grant.size:
        raise InvalidRequest(f"body: {len(content)} bytes; {grant.size} were prepared")
    if len(content) > grant.max_bytes:  # read_capped stops sooner; this holds whatever reads it
        raise PayloadTooLarge(f"body: larger than {grant.max_bytes} bytes")
    query = select(a).where(a.c.attachment_id == grant.attachment_id)
    async with database.read() as conn:
        row = (await conn.execute(query)).first()
    if row is None:
        raise NotFound(f"token: attachment {grant.attachment_id} no longer exists")
    if row.uploaded_at is not None:
        raise AttachmentUploaded(f"attachment_id: {grant.attachment_id} has its content already")
    # a key of its own per upload: of two racing uploads, the one whose row update loses
    # removes exactly its own content
    key = f"att/{grant.attachment_id}/{secrets.token_hex(8)}"
    await blobs.put(key, content, grant.content_type)
    async with database.transaction() as conn:
        stored = await conn.execute(
            update(a)
            .where(a.c.attachment_id == grant.attachment_id, a.c.uploaded_at.is_(None))
            .values(blob_key=key, uploaded_at=utcnow(), size=len(content))
        )
    if stored.rowcount != 1:
        await blobs.delete(key)
        raise AttachmentUploaded(f"attachment_id: {grant.attachment_id} has its content already")
    return UploadedAttachment(
        attachment_id=grant.attachment_id,
        name=row.file_name,
        content_type=grant.content_type,
        size=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
    )


async def store_files(blobs: BlobStore, files: Sequence[NewFile]) -> list[StoredFile]:
    """Puts files that come with a request into the attachment store, before the transaction
    that records them (`record_files`)."""
    stored = []
    for file in files:
        attachment_id = ids.new_id("att")
        key = f"att/{attachment_id}/{secrets.token_hex(8)}"
        await blobs.put(key, file.content, file.content_type)
        stored.append(
            StoredFile(attachment_id, file.name, file.content_type, len(file.content), key)
        )
    return stored


async def record_files(conn: AsyncConnection, run: RunRecord, files: Sequence[StoredFile]) -> None:
    """The stored files as attachments of the run, uploaded."""
    if not files:
        return
    now = utcnow()
    rows = [
        _row(run, file.attachment_id, file.name, file.content_type, now)
        | {"size": file.size, "blob_key": file.blob_key, "uploaded_at": now}
        for file in files
    ]
    await conn.execute(insert(a), rows)


async def run_files(
    conn: AsyncConnection, run_ids: Iterable[str], links: AttachmentLinks
) -> dict[str, list[AttachmentFile]]:
    """Per run, every attachment of it that has content (uploaded, or a delivery's payload),
    oldest first, with a download URL."""
    run_ids = list(run_ids)
    if not run_ids:
        return {}
    query = (
        select(a)
        .where(a.c.run_id.in_(run_ids), _has_content())
        .order_by(a.c.created_at, a.c.attachment_id)
    )
    found: dict[str, list[AttachmentFile]] = {}
    for row in await conn.execute(query):
        found.setdefault(row.run_id, []).append(_file(row, links))
    return found


async def files_by_id(
    conn: AsyncConnection, attachment_ids: Iterable[str], links: AttachmentLinks
) -> dict[str, AttachmentFile]:
    """The attachments named that have content, with download URLs."""
    wanted = sorted(set(attachment_ids))
    if not wanted:
        return {}
    query = select(a).where(a.c.attachment_id.in_(wanted), _has_content())
    return {row.attachment_id: _file(row, links) for row in await conn.execute(query)}


def _has_content() -> Any:
    return or_(a.c.blob_key.is_not(None), a.c.delivery_id.is_not(None))


def _file(row: Any, links: AttachmentLinks) -> AttachmentFile:
    url, expires = links.download(row.attachment_id)
    return AttachmentFile(
        attachment_id=row.attachment_id,
        name=row.file_name,
        content_type=row.content_type,
        size=row.size,
        download_url=url,
        expires_at=expires,
    )


@dataclass(frozen=True, slots=True)
class Content:
    name: str | None
    content_type: str
    data: bytes


async def content(database: Database, blobs: BlobStore, attachment_id: str) -> Content:
    """An attachment's content; 404 when it has none (yet)."""
    d = t.deliveries
    query = (
        select(a.c.file_name, a.c.content_type, a.c.blob_key, d.c.payload)
        .select_from(a.outerjoin(d, d.c.delivery_id == a.c.delivery_id))
        .where(a.c.attachment_id == attachment_id)
    )
    async with database.read() as conn:
        row = (await conn.execute(query)).first()
    data = None
    if row is not None and row.blob_key is not None:
        data = await blobs.get(row.blob_key)
    elif row is not None and row.payload is not None:
        data = bytes(row.payload)
    if row is None or data is None:
        raise NotFound(f"token: attachment {attachment_id} has no content")
    return Content(row.file_name, row.content_type or "application/octet-stream", data)


async def forget_files(blobs: BlobStore, files: Sequence[StoredFile]) -> None:
    """Removes stored files whose recording failed (the request was refused after storing)."""
    for file in files:
        await blobs.delete(file.blob_key)
