"""The shapes of what runs leave behind: an artifact as its run's runner hands it over and as the
store holds it, and its details as readers see them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from msgspec import Meta, Struct
from sqlalchemy import Row

from gateway.foundation.api.fields import Timestamp
from gateway.foundation.store.rows import from_row

ArtifactType = Literal["FILE", "PULL_REQUEST", "TRANSCRIPT"]
PrState = Literal["open", "closed", "merged"]


class NewArtifact(Struct, kw_only=True):
    """An artifact to store (tables.run_artifacts): a FILE or TRANSCRIPT with its content, or a
    PULL_REQUEST."""

    artifact_type: ArtifactType
    filename: str | None = None
    filepath: str | None = None
    mime_type: str | None = None
    size: int | None = None
    content: bytes | None = None
    description: str | None = None
    title: str | None = None
    url: str | None = None
    branch: str | None = None
    pr_state: PrState | None = None


class StoredArtifact(NewArtifact, kw_only=True):
    """An artifact as the store holds it."""

    artifact_uid: str
    run_id: str
    created_at: datetime

    @classmethod
    def from_row(cls, row: Row[Any]) -> StoredArtifact:
        return from_row(cls, row)


class ArtifactData(Struct, kw_only=True, omit_defaults=True):
    """A file's or transcript's (content_type ... title), or a pull request's (url ... state);
    fields without a value are absent."""

    content_type: str | None = None
    download_url: Annotated[str, Meta(description="signed, works without credentials")] | None = (
        None
    )
    expires_at: Timestamp | None = None
    filename: str | None = None
    filepath: str | None = None
    size_bytes: int | None = None
    description: str | None = None
    url: Annotated[str, Meta(description="PULL_REQUEST: the pull request")] | None = None
    branch: str | None = None
    title: str | None = None
    state: Literal["open", "closed", "merged"] | None = None


class ArtifactDetails(Struct, kw_only=True):
    artifact_type: Literal["FILE", "PULL_REQUEST", "TRANSCRIPT"]
    artifact_uid: str
    run_id: str
    created_at: Timestamp
    data: ArtifactData

    @classmethod
    def of(cls, artifact: StoredArtifact, signed: tuple[str, datetime]) -> ArtifactDetails:
        """`signed`: a download URL of the artifact's content and when it expires."""
        if artifact.artifact_type == "PULL_REQUEST":
            data = ArtifactData(
                url=artifact.url,
                branch=artifact.branch,
                title=artifact.title,
                state=artifact.pr_state,
            )
        else:
            url, expires = signed
            data = ArtifactData(
                content_type=artifact.mime_type,
                download_url=url,
                expires_at=expires,
                filename=artifact.filename,
                filepath=artifact.filepath or artifact.filename,
                size_bytes=artifact.size,
                description=artifact.description,
                title=artifact.title,
            )
        return cls(
            artifact_type=artifact.artifact_type,
            artifact_uid=artifact.artifact_uid,
            run_id=artifact.run_id,
            created_at=artifact.created_at,
            data=data,
        )
