"""Opaque, tamper-evident cursors bound to the listing (and sort) they were issued for."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from msgspec import Struct

from gateway.foundation.api.fields import Cursor, Limit
from gateway.kernel.errors import InvalidRequest
from gateway.kernel.security import SecretBox


class PageInfo(Struct):
    has_next_page: bool
    next_cursor: str | None


class Page(Struct, kw_only=True):
    """The query of a plain paged listing."""

    limit: Limit = 50
    cursor: Cursor | None = None


class Cursors:
    def __init__(self, box: SecretBox) -> None:
        self._box = box

    def encode(self, scope: str, position: list[Any]) -> str:
        return self._box.sign(orjson.dumps([scope, position]))

    def decode(self, scope: str, cursor: str | None) -> list[Any] | None:
        """The position in `cursor` (None without one); 400 when forged or from another listing."""
        if cursor is None:
            return None
        data = self._box.unsign(cursor)
        try:
            issued_scope, position = orjson.loads(data) if data is not None else (None, None)
        except (orjson.JSONDecodeError, ValueError, TypeError):
            issued_scope, position = None, None
        if issued_scope != scope or not isinstance(position, list):
            raise InvalidRequest("cursor: invalid, or issued for a different listing or sort")
        return position

    def encode_keyset(self, scope: str, moment: datetime, key: str) -> str:
        """A cursor after the item sorted at (moment, key), for keyset pagination."""
        return self.encode(scope, [moment.isoformat(), key])

    def decode_keyset(self, scope: str, cursor: str | None) -> tuple[datetime, str] | None:
        position = self.decode(scope, cursor)
        if position is None:
            return None
        try:
            moment, key = position
            return datetime.fromisoformat(moment), str(key)
        except (TypeError, ValueError) as exc:
            raise InvalidRequest("cursor: invalid, or issued for a different listing") from exc


def page_info(next_cursor: str | None) -> PageInfo:
    return PageInfo(has_next_page=next_cursor is not None, next_cursor=next_cursor)
