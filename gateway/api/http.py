"""Response rendering shared by the API handlers."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_UTC_Z)


def json_response(content: Any, status_code: int = 200) -> JSONResponse:
    return JSONResponse(content, status_code=status_code)
