"""The shapes of the factory API: listing factories and dispatching work to one. A factory
itself is `gateway.foundation.accounts.factories.Factory`, the same object the rules read."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct

from gateway.foundation.accounts.factories import Factory
from gateway.foundation.api.fields import Cursor, Limit
from gateway.foundation.api.pagination import PageInfo
from gateway.platform.factories.dispatch import (
    MAX_PROMPT,
    TICKET_REF,
    DispatchRequest,
    parse_ticket_url,
)


class FactoryList(Struct):
    factories: list[Factory]
    page_info: PageInfo


class FactoryQuery(Struct, kw_only=True):
    team_uid: str | None = None
    search: str | None = None
    limit: Limit = 50
    cursor: Cursor | None = None


class FactoryRunCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    prompt: Annotated[str, Meta(min_length=1, max_length=MAX_PROMPT, pattern=r"\S")]
    title: Annotated[str, Meta(min_length=1, max_length=500, pattern=r"\S")] | None = None
    ticket_ref: (
        Annotated[
            str,
            Meta(
                pattern=f"^{TICKET_REF.pattern}$",
                description="for example PROJ-123 or owner/repo#123",
            ),
        ]
        | None
    ) = None
    ticket_url: Annotated[str, Meta(max_length=2000, description="an http or https URL")] | None = (
        None
    )

    def request(self) -> DispatchRequest:
        # the URL rule is more than a pattern: parse_ticket_url raises its own 400
        url = parse_ticket_url(self.ticket_url)
        return DispatchRequest(self.prompt, self.title, self.ticket_ref, url)
