"""Where attachment content is kept (GATEWAY_ATTACHMENT_STORE): the SQL store, a directory, or
an S3-compatible object store (`gateway.foundation.blobs.s3`), behind one interface
(`BlobStore`)."""

from __future__ import annotations

from gateway.foundation.blobs.contract import BlobStore
from gateway.foundation.blobs.database import DatabaseBlobs
from gateway.foundation.blobs.filesystem import FilesystemBlobs
from gateway.foundation.store import Database
from gateway.kernel.attachment_storage import AttachmentStorage


def open_blob_store(storage: AttachmentStorage, database: Database) -> BlobStore:
    """The store the settings name."""
    if storage.store == "filesystem":
        return FilesystemBlobs(storage.directory)
    if storage.store == "s3":
        # imported only here: its HTTP client is no cost to processes that keep content elsewhere
        from gateway.foundation.blobs.s3 import S3Blobs

        assert storage.s3 is not None  # parse_attachment_storage requires it
        return S3Blobs(storage.s3)
    return DatabaseBlobs(database)


__all__ = ["BlobStore", "DatabaseBlobs", "FilesystemBlobs", "open_blob_store"]
