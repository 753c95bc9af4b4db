"""agentDefaults -> agent -> automation: each layer overrides what it declares. `secrets` and
`mcpServers` replace the inherited value (the factory-wide ones always apply); null or an
empty `workerHost` clears an inherited host, as null or empty `reasoningLevel` clears a level;
a harness override keeps the inherited harness's other keys unless it changes `type`, which
starts a new harness (so it must name a model)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from msgspec import UnsetType

from .builders.context import BuildContext
from .codes import Code
from .documents import Document
from .model import (
    CredentialStrategy,
    EffectiveConfig,
    EffectiveHarness,
    Factory,
    HarnessLayer,
    HarnessType,
    RunConfig,
)
from .positions import DocPath

__all__ = ["Layer", "Resolved", "resolve_defaults", "resolve_layer"]

T = TypeVar("T")
D = TypeVar("D")


@dataclass(frozen=True)
class Layer:
    config: RunConfig
    doc: Document
    base: DocPath  # where the layer's keys sit in its document


@dataclass(frozen=True)
class Resolved:
    """An effective configuration, with what the next layer needs: the innermost declared
    secrets and MCP servers (which a layer replaces) and the layer whose `auth` it carries."""

    config: EffectiveConfig
    secrets: tuple[str, ...] = ()
    mcp_servers: dict[str, str] = field(default_factory=dict)
    auth_from: Layer | None = None


def resolve_defaults(factory: Factory, layer: Layer, ctx: BuildContext) -> Resolved | None:
    """The effective configuration agentDefaults alone gives."""
    harness = layer.config.harness
    # the schema requires `model` or a harness with `type` and `model` in agentDefaults
    assert isinstance(harness, HarnessLayer) and isinstance(harness.model, str)
    assert not isinstance(harness.type, UnsetType)
    start = EffectiveHarness(
        type=harness.type,
        model=harness.model,
        reasoning_level=_set(harness.reasoning_level, None),
        auth=_set(harness.auth, None),
    )
    seed = Resolved(
        EffectiveConfig(harness=start, credential_strategy=factory.credential_strategy),
        auth_from=layer if start.auth else None,
    )
    return resolve_layer(seed, layer, factory, ctx, with_harness=False)


def resolve_layer(
    above: Resolved,
    layer: Layer,
    factory: Factory,
    ctx: BuildContext,
    *,
    with_harness: bool = True,
    credential_strategy: CredentialStrategy | None = None,
) -> Resolved | None:
    """`above` overridden by `layer`; None once the problems of the result are reported."""
    config = layer.config
    harness, auth_from = above.config.harness, above.auth_from
    if with_harness and isinstance(config.harness, HarnessLayer):
        merged = _merge_harness(above, config.harness, layer, ctx)
        if merged is None:
            return None
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
    return resolved if _auth_fits(resolved, ctx) else None


def _merge_harness(
    above: Resolved, override: HarnessLayer, layer: Layer, ctx: BuildContext
) -> tuple[EffectiveHarness, Layer | None] | None:
    current = above.config.harness
    at: DocPath = (*layer.base, "harness")
    new_type: HarnessType = _set(override.type, current.type)
    if new_type == current.type:
        merged = EffectiveHarness(
            type=current.type,
            model=_set(override.model, current.model),
            reasoning_level=_set(override.reasoning_level, current.reasoning_level),
            auth=_set(override.auth, current.auth),
        )
    elif isinstance(override.model, UnsetType):
        layer.doc.report(
            ctx.sink,
            (*at, "type"),
            Code.INVALID_HARNESS,
            f"this harness switches from {current.type} to {new_type}, so it must name a "
            f"`model` of {new_type}: add harness.model",
        )
        return None
    else:
        merged = EffectiveHarness(
            type=new_type,
            model=override.model,
            reasoning_level=_set(override.reasoning_level, None),
            auth=_set(override.auth, None),
        )
    if merged.type == "oz" and (merged.reasoning_level or merged.auth):
        key = "reasoningLevel" if merged.reasoning_level else "auth"
        layer.doc.report(
            ctx.sink,
            (*at, key),
            Code.INVALID_HARNESS,
            f"the harness here is oz, which takes no `{key}`: remove it, or set harness.type "
            "to claude, codex or gemini",
            at_key=True,
        )
        return None
    declares_auth = not isinstance(override.auth, UnsetType)
    auth_from = layer if declares_auth else above.auth_from if merged.auth else None
    return merged, auth_from


def _auth_fits(resolved: Resolved, ctx: BuildContext) -> bool:
    """`auth.source: workerEnvironment` reads the worker's environment: it needs runs on a
    self-hosted worker."""
    auth, host = resolved.config.harness.auth, resolved.config.worker_host
    if auth is None or auth.source != "workerEnvironment" or (host and host != "warp"):
        return True
    layer = resolved.auth_from
    assert layer is not None  # an auth always comes from a layer
    layer.doc.report(
        ctx.sink,
        (*layer.base, "harness", "auth", "source"),
        Code.INVALID_HARNESS,
        "`source: workerEnvironment` needs runs on a self-hosted worker, but the workerHost "
        f"here is {host or 'not set'}: set workerHost to the worker's id, or use "
        "source: managedSecret",
        at_key=True,
    )
    return False


def _set(value: T | UnsetType, default: D) -> T | D:
    return default if isinstance(value, UnsetType) else value
