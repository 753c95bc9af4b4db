"""The shapes of provider connections: what a caller asks for, and the connection as every
reader sees it (CONTRACT §9). One description each: the API decodes requests into them, the
rules take and return them, and the OpenAPI document is made from them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.api.fields import Timestamp
from gateway.providers import DISPLAY_NAMES
from gateway.signatures import PROVIDER_VERIFIERS

if TYPE_CHECKING:
    Provider = str
else:  # the providers a connection can be made to, as an enum
    Provider = Literal[tuple(PROVIDER_VERIFIERS)]

INGRESS_PATH = "/webhooks/p/"
# the providers whose webhook settings let the user paste a secret of their choosing: the
# gateway generates one for them; Slack and Linear issue their own signing secrets
GENERATED: frozenset[str] = frozenset({"github", "gitlab", "jira"})

Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\S")]
Secret = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=1000,
        description="the provider's signing secret (Slack, Linear issue theirs)",
    ),
]
SecretName = Annotated[
    str, Meta(min_length=1, max_length=200, description="an existing team secret")
]
Bot = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=200,
        pattern=r"^\S+$",
        description="the connection's own account: the GitLab bot's username, the Slack app's "
        "bot user id, the Jira agent's account id (its own messages start nothing; GitLab "
        "bot_mentioned and Jira agent_session_created name it)",
    ),
]
ShownOnce = Annotated[str, Meta(description="only when the service generated it; shown once")]


class ConnectionCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    """Without `secret` or `secret_name`, GitHub, GitLab and Jira connections get a generated
    secret (shown once); Slack and Linear ones answer 401 until `rotate-secret` supplies the
    provider's. The name defaults to the provider's and is stored stripped."""

    provider: Provider
    name: Name | None = None
    secret_name: SecretName | None = None
    secret: Secret | None = None
    bot: Bot | None = None

    def __post_init__(self) -> None:
        if self.secret is not None and self.secret_name is not None:
            raise ValueError("secret_name: give either secret or secret_name, not both")
        self.name = (self.name or DISPLAY_NAMES[self.provider]).strip()


class ConnectionPatch(Struct, kw_only=True, forbid_unknown_fields=True):
    """Only these fields change; `bot: null` clears it."""

    name: Name | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET
    bot: Bot | UnsetType | None = UNSET

    def __post_init__(self) -> None:
        if self.name is not UNSET:
            self.name = self.name.strip()


class RotateSecret(Struct, kw_only=True, forbid_unknown_fields=True):
    secret: Secret | None = None


class RotatedSecret(Struct, kw_only=True, omit_defaults=True):
    secret: ShownOnce | UnsetType = UNSET


class ProviderConnection(Struct, kw_only=True, omit_defaults=True):
    """`secret` once, when the service generated it; `secret_name` and `bot` when set."""

    uid: str
    provider: Provider
    name: str
    ingress_url: Annotated[str, Meta(description="{webhook_base_url}/webhooks/p/{uid}")]
    enabled: bool
    created_at: Timestamp
    secret: ShownOnce | UnsetType = UNSET
    secret_name: str | UnsetType = UNSET
    bot: str | UnsetType = UNSET

    @classmethod
    def from_row(
        cls, row: Row[Any], base_url: str, generated: str | None = None
    ) -> ProviderConnection:
        """`generated`: the secret the service has just made, shown this once."""
        return cls(
            uid=row.uid,
            provider=row.provider,
            name=row.name,
            ingress_url=ingress_url(base_url, row.uid),
            enabled=row.enabled,
            created_at=row.created_at,
            secret=UNSET if generated is None else generated,
            secret_name=UNSET if row.secret_name is None else row.secret_name,
            bot=UNSET if row.bot is None else row.bot,
        )


class ConnectionList(Struct):
    provider_connections: list[ProviderConnection]


def ingress_url(base_url: str, uid: str) -> str:
    return f"{base_url}{INGRESS_PATH}{uid}"
