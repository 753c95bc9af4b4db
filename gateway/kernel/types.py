"""Shared type aliases."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from datetime import datetime
from typing import Annotated, Any

from msgspec import Meta

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# an arbitrary JSON object as a client sent it (a payload filter, a webhook payload's body, an
# MCP server configuration)
JsonObject = dict[str, Any]

# a moment in a body the service sends; here, below every layer that describes a body
Timestamp = Annotated[datetime, Meta(tz=True, description="RFC 3339, UTC")]
