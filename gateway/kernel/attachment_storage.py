"""Where attachment content is kept, and what may be uploaded (GATEWAY_ATTACHMENT_*, GATEWAY_S3_*;
docs/configuration.md). Parsing raises ValueError naming the variable; settings wraps it.

Stores: `database` (the default: the SQL store's `blobs` table, nothing else to run),
`filesystem` (files under GATEWAY_ATTACHMENT_DIR; every process of a deployment must see the
same directory) or `s3` (any S3-compatible object store).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

StoreKind = Literal["database", "filesystem", "s3"]
STORE_KINDS: tuple[StoreKind, ...] = ("database", "filesystem", "s3")
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_DIR = Path("data/attachments")
# media types an upload may declare: text, images, documents and archives; `*` ends a pattern
DEFAULT_TYPES = (
    "text/*",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/json",
    "application/pdf",
    "application/xml",
    "application/yaml",
    "application/zip",
    "application/gzip",
    "application/x-tar",
    "application/octet-stream",
)
MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9*][a-z0-9!#$&^_.+-]{0,126}")


@dataclass(frozen=True, slots=True)
class S3Config:
    bucket: str
    endpoint_url: str  # https://s3.<region>.amazonaws.com or any S3-compatible service
    region: str
    access_key_id: str
    secret_access_key: str = ""
    prefix: str = "attachments/"


@dataclass(frozen=True, slots=True)
class AttachmentStorage:
    store: StoreKind = "database"
    directory: Path = DEFAULT_DIR
    s3: S3Config | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    types: tuple[str, ...] = DEFAULT_TYPES

    def allows(self, media_type: str) -> bool:
        """Whether an upload may declare `media_type` (no parameters, lower case)."""
        return any(
            media_type == allowed or (allowed.endswith("*") and media_type.startswith(allowed[:-1]))
            for allowed in self.types
        )


def parse_attachment_storage(env: Mapping[str, str]) -> AttachmentStorage:
    """The settings from `env` (variable names without the GATEWAY_ prefix)."""
    store = env.get("ATTACHMENT_STORE", "database").strip().lower()
    if store not in STORE_KINDS:
        raise ValueError(f"ATTACHMENT_STORE={store!r}: expected one of {', '.join(STORE_KINDS)}")
    return AttachmentStorage(
        store=store,
        directory=Path(env.get("ATTACHMENT_DIR", "").strip() or DEFAULT_DIR),
        s3=_s3(env) if store == "s3" else None,
        max_bytes=_max_bytes(env.get("ATTACHMENT_MAX_BYTES")),
        types=_types(env.get("ATTACHMENT_TYPES")),
    )


def _s3(env: Mapping[str, str]) -> S3Config:
    bucket = env.get("S3_BUCKET", "").strip()
    if not bucket:
        raise ValueError("S3_BUCKET='': required with ATTACHMENT_STORE=s3")
    region = env.get("S3_REGION", "").strip() or "us-east-1"
    endpoint = env.get("S3_ENDPOINT_URL", "").strip() or f"https://s3.{region}.amazonaws.com"
    if not endpoint.startswith(("http://", "https://")):
        raise ValueError(f"S3_ENDPOINT_URL={endpoint!r}: expected an http(s) URL")
    key_id = env.get("S3_ACCESS_KEY_ID", "").strip()
    if not key_id:
        raise ValueError("S3_ACCESS_KEY_ID='': required with ATTACHMENT_STORE=s3")
    prefix = env.get("S3_PREFIX", "attachments/").strip().lstrip("/")
    return S3Config(
        bucket=bucket,
        endpoint_url=endpoint.rstrip("/"),
        region=region,
        access_key_id=key_id,
        secret_access_key=env.get("S3_SECRET_ACCESS_KEY", ""),
        prefix=prefix,
    )


def _max_bytes(value: str | None) -> int:
    if value is None:
        return DEFAULT_MAX_BYTES
    if not value.strip().isdigit() or int(value) < 1:
        raise ValueError(f"ATTACHMENT_MAX_BYTES={value!r}: expected a positive whole number")
    return int(value)


def _types(value: str | None) -> tuple[str, ...]:
    if value is None or not value.strip():
        return DEFAULT_TYPES
    types = tuple(part.strip().lower() for part in value.split(",") if part.strip())
    for media_type in types:
        if not MEDIA_TYPE.fullmatch(media_type) or "*" in media_type[:-1]:
            raise ValueError(
                f"ATTACHMENT_TYPES={value!r}: {media_type!r} is not a media type (type/subtype, "
                "or type/* and type/prefix*)"
            )
    return types
