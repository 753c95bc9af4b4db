"""A run's artifacts (tables.run_artifacts): the files, pull requests and transcripts its runner
stores (runners/reports.py, runners/finish.py), each FILE and PULL_REQUEST also listed in the
run's `artifacts`; and the files a run came with (its attachments), which read as FILE artifacts
too."""

from __future__ import annotations

from datetime import datetime

from msgspec import UNSET, structs
from sqlalchemy import insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.kernel import ids
from gateway.kernel.errors import NotFound
from gateway.platform.runs.outputs.models import NewArtifact, StoredArtifact
from gateway.platform.runs.record.models import (
    ArtifactItemData,
    RunArtifact,
    RunRecord,
    file_artifact,
)
from gateway.platform.runs.record.store import find_run, json_column

r = t.runs


async def insert_artifact(
    conn: AsyncConnection, run: RunRecord, artifact: NewArtifact, now: datetime
) -> str:
    """Stores the artifact, listed among the run's `artifacts` unless a TRANSCRIPT; its uid."""
    uid = ids.new_uuid()
    columns = structs.asdict(artifact)
    await conn.execute(
        insert(t.run_artifacts).values(
            artifact_uid=uid, run_id=run.run_id, created_at=now, **columns
        )
    )
    if artifact.artifact_type != "TRANSCRIPT":
        listed = [*(run.artifacts or []), _artifact_item(uid, now, artifact)]
        await conn.execute(
            update(r).where(r.c.run_id == run.run_id).values(artifacts=json_column(listed))
        )
    return uid


def _artifact_item(uid: str, at: datetime, artifact: NewArtifact) -> RunArtifact:
    """The run's `artifacts` entry, in the official client's ArtifactItem shape."""
    if artifact.artifact_type == "PULL_REQUEST":
        data = ArtifactItemData(
            url=artifact.url or "",
            branch=artifact.branch or "",
            title=artifact.title or UNSET,
            state=artifact.pr_state or UNSET,
        )
        return RunArtifact(artifact_type="PULL_REQUEST", created_at=at.isoformat(), data=data)
    filename = artifact.filename or ""
    return file_artifact(
        uid,
        at,
        filename,
        artifact.mime_type or "",
        artifact.size or 0,
        filepath=artifact.filepath,
        description=artifact.description,
        title=artifact.title,
    )


async def artifact(conn: AsyncConnection, artifact_uid: str) -> tuple[StoredArtifact, RunRecord]:
    """(artifact, its run); 404 when unknown. A webhook run's payload attachment, listed among
    its artifacts as a FILE, is one too."""
    a = t.run_artifacts
    row = (await conn.execute(select(a).where(a.c.artifact_uid == artifact_uid))).first()
    found = StoredArtifact.from_row(row) if row is not None else None
    if found is None and artifact_uid.startswith("att_"):
        found = await _attachment_artifact(conn, artifact_uid)
    run = None if found is None else await find_run(conn, found.run_id)
    if found is None or run is None:
        raise NotFound(f"artifact_uid: {artifact_uid} not found")
    return found, run


async def _attachment_artifact(conn: AsyncConnection, attachment_id: str) -> StoredArtifact | None:
    """A file a run came with, listed among its artifacts as a FILE: a webhook run's
    event-payload.json, whose content is the delivery's payload (stored once, in the delivery
    log), or a file in the attachment store (content None here: it is read from there,
    gateway/foundation/blobs). None for a prepared attachment whose content has not been
    uploaded."""
    a, d = t.attachments, t.deliveries
    query = (
        select(a, d.c.payload)
        .select_from(a.outerjoin(d, d.c.delivery_id == a.c.delivery_id))
        .where(
            a.c.attachment_id == attachment_id,
            or_(a.c.delivery_id.is_not(None), a.c.blob_key.is_not(None)),
        )
    )
    row = (await conn.execute(query)).first()
    if row is None:
        return None
    return StoredArtifact(
        artifact_type="FILE",
        artifact_uid=row.attachment_id,
        run_id=row.run_id,
        created_at=row.created_at,
        filename=row.file_name,
        mime_type=row.content_type,
        size=row.size,
        content=None if row.payload is None else bytes(row.payload),
    )


async def transcript_uid(conn: AsyncConnection, run_id: str) -> str | None:
    """The uid of the run's newest transcript."""
    a = t.run_artifacts
    query = (
        select(a.c.artifact_uid)
        .where(a.c.run_id == run_id, a.c.artifact_type == "TRANSCRIPT")
        .order_by(a.c.created_at.desc())
        .limit(1)
    )
    uid: str | None = (await conn.execute(query)).scalar()
    return uid
