"""Provider triggers: normalize a provider's delivery into trigger events, and match them.

Pure: no I/O, no framework, nothing of the rest of ``gateway``. One module per provider, each
``normalize(headers, payload, bot=None) -> list[TriggerEvent]`` and
``delivery_id(headers, payload) -> str | None``; ``match.py`` compiles trigger filters. What
each event means is in docs/providers.md ("What events map to what").
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from types import MappingProxyType
from typing import Any, Final

from . import github, gitlab, jira, linear, slack
from .event import EventValues, Headers, TriggerEvent
from .match import (
    Condition,
    EventMatcher,
    TriggerFilterError,
    compile_trigger_filter,
    failing_key,
    parse_trigger_filter,
)

__all__ = [
    "DISPLAY_NAMES",
    "NORMALIZERS",
    "PROVIDERS",
    "Condition",
    "EventMatcher",
    "EventValues",
    "Headers",
    "TriggerEvent",
    "TriggerFilterError",
    "compile_trigger_filter",
    "delivery_id",
    "failing_key",
    "normalize",
    "not_in_payload",
    "parse_trigger_filter",
    "reaches",
    "repository_key",
]

Normalizer = Callable[[Headers, Any, "str | None"], list[TriggerEvent]]
_MODULES: Final = MappingProxyType(
    {"github": github, "gitlab": gitlab, "slack": slack, "linear": linear, "jira": jira}
)
PROVIDERS: Final = tuple(_MODULES)
NORMALIZERS: Final[MappingProxyType[str, Normalizer]] = MappingProxyType(
    {name: module.normalize for name, module in _MODULES.items()}
)
_ROUTED: Final = frozenset({"github", "gitlab"})
DISPLAY_NAMES: Final = MappingProxyType(
    {"github": "GitHub", "gitlab": "GitLab", "slack": "Slack", "linear": "Linear", "jira": "Jira"}
)


def normalize(
    provider: str, headers: Headers, payload: Any, bot: str | None = None
) -> list[TriggerEvent]:
    """The trigger events of one accepted delivery of ``provider`` (``KeyError`` if unknown)."""
    return NORMALIZERS[provider](headers, payload, bot)


def delivery_id(provider: str, headers: Headers, payload: Any) -> str | None:
    """The provider's own id of the delivery, kept on its retries (``None`` if it sent none)."""
    found: str | None = _MODULES[provider].delivery_id(headers, payload)
    return found


def not_in_payload(provider: str, event: str) -> frozenset[str]:
    """Catalogue keys of ``event`` its payloads do not (always) tell."""
    keys: frozenset[str] = _MODULES[provider].NOT_IN_PAYLOAD.get(event, frozenset())
    return keys


def repository_key(owner: str, name: str) -> str:
    """A factory's ``repositories`` entry in the form events carry in ``values["repos"]``."""
    return f"{owner}/{name}".casefold()


def reaches(event: TriggerEvent, repositories: Collection[str]) -> bool:
    """Whether ``event`` reaches a factory whose repositories are ``repositories``
    (``repository_key`` forms): GitHub and GitLab events reach only the factories that list
    their repository; other providers' events reach every factory."""
    if event.provider not in _ROUTED:
        return True
    return any(repo in repositories for repo in event.values.get("repos", ()))
