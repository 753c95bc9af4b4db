"""Field types shared by the API's request and response Structs."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from msgspec import Meta

from gateway.types import Timestamp as Timestamp

Moment = Annotated[datetime, Meta(tz=True, description="RFC 3339 with a time zone offset")]
Limit = Annotated[int, Meta(ge=1, le=100, description="page size")]
Cursor = Annotated[str, Meta(description="page_info.next_cursor of the previous page")]
