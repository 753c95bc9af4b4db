"""Attachment content as files under one directory (GATEWAY_ATTACHMENT_DIR). Every process of a
deployment must see the same directory (a shared volume) for uploads and downloads to meet."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path


class FilesystemBlobs:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        parts = key.split("/")
        if not key or any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"blob key {key!r}: empty, '.' or '..' segments")
        return self.root.joinpath(*parts)

    async def put(self, key: str, content: bytes, content_type: str) -> None:
        await asyncio.to_thread(self._write, self._path(key), content)

    @staticmethod
    def _write(path: Path, content: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # written aside, then renamed: a reader never sees half a file
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(content)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    async def get(self, key: str) -> bytes | None:
        path = self._path(key)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            return None

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self._path(key).unlink, missing_ok=True)

    async def close(self) -> None:
        return None
