"""The shapes of provider connections: what a caller asks for, and the connection as every
reader sees it (CONTRACT §9). One description each: the API decodes requests into them, the
rules take and return them, and the OpenAPI document is made from them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.foundation.api.fields import Timestamp
from gateway.foundation.store.rows import from_row
from gateway.webhook_gateway.providers import DISPLAY_NAMES
from gateway.webhook_gateway.signatures import PROVIDER_VERIFIERS

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

# reply credentials (CONTRACT §10): write-only, stored encrypted, never in an answer
NO_SPACE = r"^\S+$"
ApiToken = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=2000,
        pattern=NO_SPACE,
        description="write-only: a GitHub, GitLab or Linear token, or Jira's API token",
    ),
]
AppId = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9.]+$",
        description="write-only: a GitHub App's id (or client id)",
    ),
]
PrivateKey = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=16000,
        description="write-only: the GitHub App's private key (PEM)",
    ),
]
InstallationId = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=20,
        pattern=r"^[0-9]+$",
        description="write-only: the id of the GitHub App's installation",
    ),
]
BotToken = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=2000,
        pattern=r"^xox\S+$",
        description="write-only: the Slack app's bot token (xoxb-...)",
    ),
]
Email = Annotated[
    str,
    Meta(
        min_length=3,
        max_length=320,
        pattern=r"^[^@\s]+@[^@\s]+$",
        description="write-only: the Atlassian account Jira's API token belongs to",
    ),
]
ApiBaseUrl = Annotated[
    str,
    Meta(
        max_length=500,
        pattern=r"^https?://[^\s/?#@]+(/[^\s?#]*)?$",
        description="the provider's API root: GitHub Enterprise `https://<host>/api/v3`, GitLab "
        "`https://<host>/api/v4`, the Jira site `https://<site>.atlassian.net` (required with "
        "Jira credentials)",
    ),
]
Template = Annotated[str, Meta(min_length=1, max_length=10_000)]


class ReplyTemplateOverrides(Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """Jinja2 templates of the connection's replies (docs/providers.md#reply-templates); a
    missing one is the default."""

    started: Template | UnsetType = UNSET
    ended: Template | UnsetType = UNSET

    def sources(self) -> dict[str, str]:
        return {
            phase: text
            for phase, text in (("started", self.started), ("ended", self.ended))
            if isinstance(text, str)
        }


class ReplyCredentialsIn(Struct, kw_only=True, forbid_unknown_fields=True):
    """What POST and PATCH take for replies. In a PATCH a given field replaces the stored one,
    `null` removes it, and the fields that remain must be complete (docs/providers.md)."""

    api_token: ApiToken | UnsetType | None = UNSET
    app_id: AppId | UnsetType | None = UNSET
    private_key: PrivateKey | UnsetType | None = UNSET
    installation_id: InstallationId | UnsetType | None = UNSET
    bot_token: BotToken | UnsetType | None = UNSET
    email: Email | UnsetType | None = UNSET
    api_base_url: ApiBaseUrl | UnsetType | None = UNSET
    reply_templates: ReplyTemplateOverrides | UnsetType | None = UNSET


class ConnectionCreate(ReplyCredentialsIn, kw_only=True, forbid_unknown_fields=True):
    """Without `secret` or `secret_name`, GitHub, GitLab and Jira connections get a generated
    secret (shown once); Slack and Linear ones answer 401 until `rotate-secret` supplies the
    provider's. The name defaults to the provider's and is stored stripped. Without reply
    credentials the connection only receives (`replies: false`)."""

    provider: Provider
    name: Name | None = None
    secret_name: SecretName | None = None
    secret: Secret | None = None
    bot: Bot | None = None

    def __post_init__(self) -> None:
        if self.secret is not None and self.secret_name is not None:
            raise ValueError("secret_name: give either secret or secret_name, not both")
        self.name = (self.name or DISPLAY_NAMES[self.provider]).strip()


class ConnectionPatch(ReplyCredentialsIn, kw_only=True, forbid_unknown_fields=True):
    """Only these fields change; `bot: null` clears it, as `null` clears a credential."""

    name: Name | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET
    bot: Bot | UnsetType | None = UNSET

    def __post_init__(self) -> None:
        if self.name is not UNSET:
            self.name = self.name.strip()


class RotateConnectionSecret(Struct, kw_only=True, forbid_unknown_fields=True):
    secret: Secret | None = None


class RotatedConnectionSecret(Struct, kw_only=True, omit_defaults=True):
    secret: ShownOnce | UnsetType = UNSET


class ProviderConnection(Struct, kw_only=True, omit_defaults=True):
    """`secret` once, when the service generated it; `secret_name`, `bot`, `credentials`,
    `api_base_url` and `reply_templates` when set. Credential values never appear."""

    uid: str
    provider: Provider
    name: str
    ingress_url: Annotated[str, Meta(description="{webhook_base_url}/webhooks/p/{uid}")]
    enabled: bool
    created_at: Timestamp
    replies: Annotated[
        bool,
        Meta(
            description="whether runs this connection starts reply on the provider: it has "
            "credentials. false: it only receives"
        ),
    ]
    credentials: (
        Annotated[
            list[str],
            Meta(description="the names of the credential fields set (never their values)"),
        ]
        | UnsetType
    ) = UNSET
    api_base_url: str | UnsetType = UNSET
    reply_templates: ReplyTemplateOverrides | UnsetType = UNSET
    secret: ShownOnce | UnsetType = UNSET
    secret_name: str | UnsetType = UNSET
    bot: str | UnsetType = UNSET

    @classmethod
    def from_row(
        cls,
        row: Row[Any],
        base_url: str,
        credentials: list[str],
        generated: str | None = None,
    ) -> ProviderConnection:
        """`credentials`: the names of the credential fields the row holds; `generated`: the
        secret the service has just made, shown this once."""
        templates = row.reply_templates
        return from_row(
            cls,
            row,
            ingress_url=ingress_url(base_url, row.uid),
            replies=bool(credentials),
            credentials=credentials or UNSET,
            api_base_url=UNSET if row.api_base_url is None else row.api_base_url,
            reply_templates=UNSET if not templates else ReplyTemplateOverrides(**templates),
            secret=UNSET if generated is None else generated,
            secret_name=UNSET if row.secret_name is None else row.secret_name,
            bot=UNSET if row.bot is None else row.bot,
        )


class ConnectionList(Struct):
    provider_connections: list[ProviderConnection]


def ingress_url(base_url: str, uid: str) -> str:
    return f"{base_url}{INGRESS_PATH}{uid}"
