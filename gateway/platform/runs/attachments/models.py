"""The shapes of attachments: preparing them (each with a signed upload URL on this gateway),
what an upload answers, and the files a runner is handed (each with a signed download URL).
docs/runs-and-tasks.md, "Attachments"."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from msgspec import Meta, Struct

from gateway.foundation.api.fields import Timestamp

MediaType = Annotated[
    str,
    Meta(
        max_length=127,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$",
        description="type/subtype, without parameters",
    ),
]


class FileSpec(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=300)] | None = None
    content_type: Annotated[
        MediaType, Meta(description="the Content-Type the upload must carry; one the service takes")
    ] = "application/octet-stream"
    size: (
        Annotated[int, Meta(ge=0, description="the upload's exact size in bytes, when known")]
        | None
    ) = None


class AttachmentsPrepare(Struct, kw_only=True, forbid_unknown_fields=True):
    files: (
        Annotated[
            list[FileSpec],
            Meta(min_length=1, max_length=20, description="absent: one attachment without a name"),
        ]
        | None
    ) = None

    def specs(self) -> list[FileSpec]:
        return [FileSpec()] if self.files is None else self.files


class UploadTarget(Struct, kw_only=True):
    """Where the attachment's bytes go: one PUT of the whole content, no credentials needed."""

    url: Annotated[str, Meta(description="signed; works until expires_at")]
    method: Literal["PUT"]
    headers: Annotated[dict[str, str], Meta(description="send these (the Content-Type)")]
    max_bytes: int
    expires_at: Timestamp


class PreparedAttachment(Struct, kw_only=True):
    attachment_id: str
    name: str | None
    upload: UploadTarget


class PreparedAttachments(Struct):
    attachments: list[PreparedAttachment]
    run_id: Annotated[str, Meta(description="the run the ids are valid for")]
    conversation_id: str


class UploadedAttachment(Struct, kw_only=True):
    attachment_id: str
    name: str | None
    content_type: str
    size: int
    sha256: Annotated[str, Meta(description="of the bytes stored, hex")]


class AttachmentFile(Struct, kw_only=True):
    """An attachment's content as a runner fetches it: a signed URL on this gateway."""

    attachment_id: str
    name: str | None
    content_type: str | None
    size: int | None
    download_url: Annotated[str, Meta(description="signed, no credentials needed")]
    expires_at: Timestamp


class UploadGrant(Struct, kw_only=True, frozen=True):
    """What a signed upload URL allows: one upload to one prepared attachment."""

    attachment_id: str
    content_type: str
    max_bytes: int
    size: int | None
    expires_at: datetime


Base64 = Annotated[str, Meta(max_length=1_000_000, description="the file's bytes, base64")]


class FileAttachment(Struct, kw_only=True, forbid_unknown_fields=True):
    """A file sent with a new run (the Python client's `attachments`)."""

    data: Base64
    file_name: Annotated[str, Meta(min_length=1, max_length=300)]
    mime_type: MediaType


class ImageAttachment(Struct, kw_only=True, forbid_unknown_fields=True):
    """An image sent with a new run (the TypeScript client's `images`)."""

    data: Base64
    mime_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
