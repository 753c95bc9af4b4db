"""Shared type aliases."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# an arbitrary JSON object as a client sent it (a payload filter, a webhook payload's body, an
# MCP server configuration)
JsonObject = dict[str, Any]
