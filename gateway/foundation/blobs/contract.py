"""What every attachment store does: keep bytes under a key, give them back, forget them."""

from __future__ import annotations

from typing import Protocol


class BlobStore(Protocol):
    """Content by key. Keys are the service's own (`att/<attachment id>`): printable ASCII,
    no `..` segments. `put` of an existing key replaces its content."""

    async def put(self, key: str, content: bytes, content_type: str) -> None: ...

    async def get(self, key: str) -> bytes | None:
        """The content, or None when nothing is stored under `key`."""
        ...

    async def delete(self, key: str) -> None:
        """Forgets `key`; nothing happens when it is unknown."""
        ...

    async def close(self) -> None: ...
