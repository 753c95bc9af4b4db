"""agentDefaults -> agent -> automation: each layer overrides what it declares. `secrets` and
`mcpServers` replace the inherited value (the factory-wide ones always apply); null or an
empty `workerHost` clears an inherited host, as null or empty `reasoningLevel` clears a level;
a harness override keeps the inherited harness's other keys unless it changes `type`, which
starts a new harness (so it must name a model).

`resolve_effective` is the whole chain as one pure function; the parser goes layer by layer
(`start`, `override`) to report a problem at the layer that makes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from msgspec import UnsetType

from .model import (
    CredentialStrategy,
    EffectiveConfig,
    EffectiveHarness,
    Factory,
    HarnessLayer,
    HarnessType,
    RunConfig,
)

__all__ = ["InheritanceError", "Problem", "Resolved", "override", "resolve_effective", "start"]

T = TypeVar("T")
D = TypeVar("D")


@dataclass(frozen=True)
class Problem:
    """A harness that does not hold together: `layer` is the token the caller gave the layer
    that makes it so, `key` the place under that layer (("harness", "type"))."""

    layer: object
    key: tuple[str, ...]
    message: str


class InheritanceError(ValueError):
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


@dataclass(frozen=True)
class Resolved:
    """An effective configuration, with what the next layer needs: the innermost declared
    secrets and MCP servers (which a layer replaces) and the layer whose `auth` it carries."""

    config: EffectiveConfig
    secrets: tuple[str, ...] = ()
    mcp_servers: dict[str, str] = field(default_factory=dict)
    auth_from: object = None


def resolve_effective(
    factory: Factory,
    agent: RunConfig,
    automation: RunConfig | None = None,
    *,
    agent_credential_strategy: CredentialStrategy | None = None,
) -> EffectiveConfig:
    """The effective configuration of an agent (`automation` None) or of an automation run
    by that agent. InheritanceError when the harness does not hold together."""
    resolved = _checked(start(factory, "agentDefaults"))
    resolved = _checked(
        override(resolved, agent, factory, "agent", credential_strategy=agent_credential_strategy)
    )
    if automation is not None:
        resolved = _checked(override(resolved, automation, factory, "automation"))
    return resolved.config


def start(factory: Factory, layer: object) -> Resolved | Problem:
    """What agentDefaults alone gives; `layer` is the token problems name."""
    harness = factory.agent_defaults.harness
    # the schema requires `model` or a harness with `type` and `model` in agentDefaults
    assert isinstance(harness, HarnessLayer) and isinstance(harness.model, str)
    assert not isinstance(harness.type, UnsetType)
    first = EffectiveHarness(
        type=harness.type,
        model=harness.model,
        reasoning_level=_set(harness.reasoning_level, None),
        auth=_set(harness.auth, None),
    )
    seed = Resolved(
        EffectiveConfig(harness=first, credential_strategy=factory.credential_strategy),
        auth_from=layer if first.auth else None,
    )
    return override(seed, factory.agent_defaults, factory, layer, with_harness=False)


def override(
    above: Resolved,
    config: RunConfig,
    factory: Factory,
    layer: object,
    *,
    with_harness: bool = True,
    credential_strategy: CredentialStrategy | None = None,
) -> Resolved | Problem:
    """`above` overridden by the layer `config`."""
    harness, auth_from = above.config.harness, above.auth_from
    if with_harness and isinstance(config.harness, HarnessLayer):
        merged = _merge_harness(above, config.harness, layer)
        if isinstance(merged, Problem):
            return merged
        harness, auth_from = merged
    secrets = _set(config.secrets, above.secrets)
    servers = _set(config.mcp_servers, above.mcp_servers)
    current = above.config
    effective = EffectiveConfig(
        harness=harness,
        runner=_set(config.runner, current.runner),
        environment_id=_set(config.environment_id, current.environment_id),
        secrets=tuple(dict.fromkeys((*factory.secrets, *secrets))),
        mcp_servers={**factory.mcp_servers, **servers},
        worker_host=_set(config.worker_host, current.worker_host),
        credential_strategy=credential_strategy or current.credential_strategy,
    )
    resolved = Resolved(effective, secrets, servers, auth_from)
    return _auth_problem(resolved) or resolved


def _merge_harness(
    above: Resolved, layer_harness: HarnessLayer, layer: object
) -> tuple[EffectiveHarness, object] | Problem:
    current = above.config.harness
    new_type: HarnessType = _set(layer_harness.type, current.type)
    if new_type == current.type:
        merged = EffectiveHarness(
            type=current.type,
            model=_set(layer_harness.model, current.model),
            reasoning_level=_set(layer_harness.reasoning_level, current.reasoning_level),
            auth=_set(layer_harness.auth, current.auth),
        )
    elif isinstance(layer_harness.model, UnsetType):
        return Problem(
            layer,
            ("harness", "type"),
            f"this harness switches from {current.type} to {new_type}, so it must "
            f"name a `model` of {new_type}: add harness.model",
        )
    else:
        merged = EffectiveHarness(
            type=new_type,
            model=layer_harness.model,
            reasoning_level=_set(layer_harness.reasoning_level, None),
            auth=_set(layer_harness.auth, None),
        )
    if merged.type == "oz" and (merged.reasoning_level or merged.auth):
        key = "reasoningLevel" if merged.reasoning_level else "auth"
        return Problem(
            layer,
            ("harness", key),
            f"the harness here is oz, which takes no `{key}`: remove it, or set "
            "harness.type to claude, codex or gemini",
        )
    declares_auth = not isinstance(layer_harness.auth, UnsetType)
    return merged, layer if declares_auth else above.auth_from if merged.auth else None


def _auth_problem(resolved: Resolved) -> Problem | None:
    """`auth.source: workerEnvironment` reads the worker's environment: it needs runs on a
    self-hosted worker."""
    auth, host = resolved.config.harness.auth, resolved.config.worker_host
    if auth is None or auth.source != "workerEnvironment" or (host and host != "warp"):
        return None
    return Problem(
        resolved.auth_from,
        ("harness", "auth", "source"),
        "`source: workerEnvironment` needs runs on a self-hosted worker, but the "
        f"workerHost here is {host or 'not set'}: set workerHost to the worker's id, "
        "or use source: managedSecret",
    )


def _checked(result: Resolved | Problem) -> Resolved:
    if isinstance(result, Problem):
        raise InheritanceError(result)
    return result


def _set(value: T | UnsetType, default: D) -> T | D:
    return default if isinstance(value, UnsetType) else value
