"""Models and cloud environments offered to runs: their records, the built-in defaults, the
parsing of a deployment's own lists (GATEWAY_MODELS[_FILE], GATEWAY_ENVIRONMENTS[_FILE]), and
which of them a run or an agent may select (`check_model`, `access_of`, `check_environment`).

Parsing raises ValueError with the path of the fault; settings names the variable around it.
A selection that is not allowed is a 400 naming the request's field.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Annotated, Literal, TypeVar

import msgspec
from msgspec import Meta, Struct

from gateway.kernel.errors import InvalidRequest

Id = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][\w.:/@+-]*$")]
Name = Annotated[str, Meta(min_length=1, max_length=200)]
Price = Annotated[float, Meta(ge=0)]
T = TypeVar("T")
Access = Literal["owned", "guest", "link_shared"]


class ModelCostSpec(Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """List price in US dollars per million tokens."""

    input_per_million_tokens: Price
    output_per_million_tokens: Price


class ModelSpec(Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    id: Id
    display_name: Name
    provider: Name
    default: bool = False
    cost: ModelCostSpec | None = None
    disabled: bool = False
    disabled_reason: Annotated[str, Meta(max_length=500)] | None = None


class GitHubRepoSpec(Struct, forbid_unknown_fields=True, frozen=True):
    owner: Name
    repo: Name


class EnvironmentSpec(Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """An environment is owned by `team_uid`, open to the teams in `guest_team_uids`, and, with
    `link_shared`, to every caller (as anyone holding its link would be)."""

    uid: Id
    name: Name
    description: Annotated[str, Meta(max_length=2000)] | None = None
    docker_image: Annotated[str, Meta(max_length=500)] | None = None
    github_repos: tuple[GitHubRepoSpec, ...] = ()
    setup_commands: tuple[Annotated[str, Meta(max_length=2000)], ...] = ()
    team_uid: Id | None = None
    guest_team_uids: tuple[Id, ...] = ()
    link_shared: bool = False
    last_updated: Annotated[datetime, Meta(tz=True)] | None = None


# Public list prices when this list was written; a deployment publishes its own with
# GATEWAY_MODELS_FILE (docs/configuration.md).
BUILTIN_MODELS: tuple[ModelSpec, ...] = (
    ModelSpec(
        id="claude-sonnet-4-5",
        display_name="Claude Sonnet 4.5",
        provider="anthropic",
        default=True,
        cost=ModelCostSpec(input_per_million_tokens=3.0, output_per_million_tokens=15.0),
    ),
    ModelSpec(
        id="gpt-5",
        display_name="GPT-5",
        provider="openai",
        cost=ModelCostSpec(input_per_million_tokens=1.25, output_per_million_tokens=10.0),
    ),
    ModelSpec(
        id="gemini-2.5-pro",
        display_name="Gemini 2.5 Pro",
        provider="google",
        cost=ModelCostSpec(input_per_million_tokens=1.25, output_per_million_tokens=10.0),
    ),
    # the ids factory definition files name (the public warp-factory-examples and
    # warp-factories-setup trees apply with the built-in list); no list price here
    *(
        ModelSpec(id=model_id, display_name=name, provider=provider)
        for model_id, name, provider in (
            ("auto", "Auto", "warp"),
            ("auto-genius", "Auto (genius)", "warp"),
            ("auto-efficient", "Auto (efficient)", "warp"),
            ("claude-4-5-haiku", "Claude 4.5 Haiku", "anthropic"),
            ("claude-5-opus-high", "Claude 5 Opus (high reasoning)", "anthropic"),
            ("gpt-5-6-sol-high", "GPT-5.6 Sol (high reasoning)", "openai"),
            ("gpt-5-6-terra-high", "GPT-5.6 Terra (high reasoning)", "openai"),
            ("grok-4-5-high", "Grok 4.5 (high reasoning)", "xai"),
            # warpdotdev-demos/warp-factories-setup, example-ticket-factory
            ("glm-5.3-fireworks", "GLM 5.3 (Fireworks)", "fireworks"),
        )
    ),
)

BUILTIN_ENVIRONMENTS: tuple[EnvironmentSpec, ...] = (
    EnvironmentSpec(
        uid="default",
        name="Default",
        description="A plain Ubuntu image without repositories",
        docker_image="ubuntu:24.04",
        link_shared=True,
        last_updated=datetime(2025, 1, 1, tzinfo=UTC),
    ),
)


def parse_models(text: str) -> tuple[ModelSpec, ...]:
    """A JSON (or YAML) list of models: unique ids, at most one default, which is enabled.
    Without a `default: true`, the first enabled model is the default."""
    models = _decode(text, tuple[ModelSpec, ...])
    _unique([m.id for m in models], "id")
    defaults = [i for i, m in enumerate(models) if m.default]
    if len(defaults) > 1:
        raise ValueError(f"[{defaults[1]}].default: only one model can be the default")
    if defaults and models[defaults[0]].disabled:
        raise ValueError(f"[{defaults[0]}].default: the default model must not be disabled")
    if not any(not m.disabled for m in models):
        raise ValueError("expected at least one model that is not disabled")
    if not defaults:
        first = next(i for i, m in enumerate(models) if not m.disabled)
        models = (*models[:first], _as_default(models[first]), *models[first + 1 :])
    return models


def parse_environments(text: str, written_at: datetime) -> tuple[EnvironmentSpec, ...]:
    """A JSON (or YAML) list of environments with unique uids, each owned or link-shared; one
    without `last_updated` was last updated when its list was written (`written_at`)."""
    environments = _decode(text, tuple[EnvironmentSpec, ...])
    _unique([e.uid for e in environments], "uid")
    for i, environment in enumerate(environments):
        if environment.team_uid is None and not environment.link_shared:
            raise ValueError(f"[{i}]: give team_uid, or link_shared: true, or both")
    return tuple(
        msgspec.structs.replace(e, last_updated=(e.last_updated or written_at).astimezone(UTC))
        for e in environments
    )


def _as_default(model: ModelSpec) -> ModelSpec:
    return msgspec.structs.replace(model, default=True)


def _decode(text: str, kind: type[T]) -> T:
    import yaml  # YAML is a superset of JSON; imported only where a list is configured

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"not valid JSON or YAML ({exc})") from exc
    if not isinstance(value, list) or not value:
        raise ValueError("expected a non-empty list")
    try:
        found: T = msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc).replace("`", "")) from exc
    return found


def _unique(keys: list[str], field: str) -> None:
    seen: set[str] = set()
    for i, key in enumerate(keys):
        if key in seen:
            raise ValueError(f"[{i}].{field}: {key!r} appears twice")
        seen.add(key)


# --- what a team may select --------------------------------------------------------------------


def check_model(models: Sequence[ModelSpec], model_id: str, field: str) -> ModelSpec:
    """The model named `model_id`; a 400 naming `field` when it is unknown or disabled."""
    for model in models:
        if model.id == model_id:
            if model.disabled:
                reason = f": {model.disabled_reason}" if model.disabled_reason else ""
                raise InvalidRequest(f"{field}: model {model_id!r} is disabled{reason}")
            return model
    raise InvalidRequest(
        f"{field}: unknown model {model_id!r}; GET /api/v1/agent/models lists the models"
    )


def access_of(spec: EnvironmentSpec, teams: Collection[str]) -> Access | None:
    """How `teams` reach the environment: theirs, as guests, by its link; None: not at all."""
    if spec.team_uid is not None and spec.team_uid in teams:
        return "owned"
    if any(team in teams for team in spec.guest_team_uids):
        return "guest"
    return "link_shared" if spec.link_shared else None


def check_environment(
    environments: Sequence[EnvironmentSpec], environment_id: str, teams: Collection[str], field: str
) -> None:
    """A 400 naming `field` unless the environment is visible to one of `teams`."""
    for spec in environments:
        if spec.uid == environment_id and access_of(spec, teams) is not None:
            return
    raise InvalidRequest(
        f"{field}: no environment {environment_id!r} available to this team; "
        "GET /api/v1/agent/environments lists them"
    )
