"""The shapes of smee-compatible channels (gateway/webhook_gateway/deliveries/channels.py)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.kernel.types import Timestamp


class ChannelCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    description: Annotated[str, Meta(max_length=500)] | None = None


class DeliveryChannel(Struct, kw_only=True, omit_defaults=True):
    uid: str
    source_uid: Annotated[str, Meta(description="the webhook (wh_) or connection (pcn_) uid")]
    created_at: Timestamp
    description: str | UnsetType = UNSET
    url: (
        Annotated[
            str,
            Meta(
                description="shown once, at creation: `smee --url <url> --target <local URL>`; "
                "the token in it is the channel's only credential"
            ),
        ]
        | UnsetType
    ) = UNSET

    @classmethod
    def from_row(cls, row: Row[Any], url: str | None = None) -> DeliveryChannel:
        return cls(
            uid=row.uid,
            source_uid=row.source_uid,
            created_at=row.created_at,
            description=row.description if row.description is not None else UNSET,
            url=url if url is not None else UNSET,
        )


class ChannelList(Struct):
    channels: list[DeliveryChannel]
