"""What each provider's API needs to post a reply, and the rules a connection's credentials
follow (CONTRACT §10). The values are secrets: they are stored encrypted, as one JSON document
(`Credentials`), and never leave the service in an answer, a log line or an export."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
from msgspec import Struct

from gateway.webhook_gateway.providers import DISPLAY_NAMES

FIELDS = ("api_token", "app_id", "private_key", "installation_id", "bot_token", "email")
GITHUB_APP = frozenset({"app_id", "private_key", "installation_id"})
# the sets of fields each provider takes: one of them, complete
SHAPES: dict[str, tuple[frozenset[str], ...]] = {
    "github": (frozenset({"api_token"}), GITHUB_APP),
    "gitlab": (frozenset({"api_token"}),),
    "slack": (frozenset({"bot_token"}),),
    "linear": (frozenset({"api_token"}),),
    "jira": (frozenset({"email", "api_token"}),),
}
# the API roots replies go to unless the connection names another (`api_base_url`); Jira has
# none: each site is its own (https://<site>.atlassian.net)
DEFAULT_API: dict[str, str] = {
    "github": "https://api.github.com",
    "gitlab": "https://gitlab.com/api/v4",
    "slack": "https://slack.com/api",
    "linear": "https://api.linear.app/graphql",
}


class Credentials(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A connection's credential values, as the secret box holds them (encrypted JSON)."""

    api_token: str | None = None
    app_id: str | None = None
    private_key: str | None = None
    installation_id: str | None = None
    bot_token: str | None = None
    email: str | None = None

    def names(self) -> list[str]:
        """The fields that are set, in FIELDS order (what answers may show: names, no values)."""
        return [name for name in FIELDS if getattr(self, name) is not None]

    def encode(self) -> str:
        return msgspec.json.encode(self).decode()

    @classmethod
    def decode(cls, text: str) -> Credentials:
        return msgspec.json.decode(text, type=cls)


def check_fields(provider: str, given: Iterable[str], api_base_url: str | None) -> None:
    """ValueError naming the field when `provider` takes none such, when a set is incomplete,
    or when two ways of authenticating are mixed. No fields at all is fine: ingress only."""
    names = set(given)
    if not names:
        return
    shapes, display = SHAPES[provider], DISPLAY_NAMES[provider]
    taken = frozenset().union(*shapes)
    unknown = _ordered(names - taken)
    if unknown:
        name = unknown[0]
        raise ValueError(f"{name}: {display} connections take no {name} ({_options(shapes)})")
    complete = [shape for shape in shapes if shape <= names]
    if complete and names - complete[0]:
        extra = _ordered(names - complete[0])[0]
        raise ValueError(f"{extra}: {display} takes {_options(shapes)}, not both")
    if complete:
        if provider == "jira" and api_base_url is None:
            raise ValueError(
                "api_base_url: required with Jira credentials (the site, "
                "https://<site>.atlassian.net)"
            )
        return
    shape = max(shapes, key=lambda candidate: len(candidate & names))
    missing = _ordered(shape - names)
    raise ValueError(f"{missing[0]}: {display} needs {_join(shape)} together")


def _options(shapes: tuple[frozenset[str], ...]) -> str:
    return " or ".join(_join(shape) for shape in shapes)


def _join(shape: frozenset[str]) -> str:
    names = _ordered(shape)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _ordered(names: Iterable[str]) -> list[str]:
    return sorted(names, key=FIELDS.index)


def api_root(provider: str, api_base_url: str | None) -> str:
    """Where the provider's API is for this connection, without a trailing slash."""
    root = api_base_url or DEFAULT_API.get(provider)
    if root is None:
        raise ValueError(f"api_base_url: {DISPLAY_NAMES[provider]} replies need the site's URL")
    return root.rstrip("/")
