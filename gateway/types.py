"""Shared type aliases."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

JsonObject = dict[str, Any]  # an arbitrary JSON object (a payload, an MCP server configuration)
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
