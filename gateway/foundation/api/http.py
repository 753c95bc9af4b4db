"""Response rendering shared by the API handlers: JSON from msgspec Structs (or plain
containers of them), timestamps in RFC 3339 with `Z` for UTC."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.responses import Response

_encode = msgspec.json.Encoder().encode


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return _encode(content)


def json_response(content: Any, status_code: int = 200) -> JSONResponse:
    return JSONResponse(content, status_code=status_code)
