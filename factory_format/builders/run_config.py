"""One layer of run configuration (agentDefaults, an agent, an automation) read from its
document, with the references it makes that only the server can check."""

from __future__ import annotations

from typing import Any

from ..documents import Document
from ..model import DeferredKind, HarnessAuth, HarnessLayer, RunConfig
from ..positions import DocPath
from .context import BuildContext

__all__ = ["read_run_config"]

_HARNESS_ALIASES = {"claude-code": "claude"}


def read_run_config(doc: Document, base: DocPath, ctx: BuildContext) -> RunConfig:
    """The layer at `base` of a schema-clean document. Null `model`, `runner`,
    `environmentId`, `secrets` and `mcpServers` inherit, like leaving them out; null or empty
    `workerHost` clears."""
    raw: dict[str, Any] = doc.get(base) or {}
    values: dict[str, Any] = {}
    if raw.get("model") is not None:
        values["harness"] = HarnessLayer(type="oz", model=raw["model"])
        ctx.defer("model", raw["model"], doc, (*base, "model"))
    elif raw.get("harness") is not None:
        values["harness"] = _harness(doc, (*base, "harness"), raw["harness"], ctx)
    if raw.get("runner") is not None:
        values["runner"] = raw["runner"]
        if raw["runner"] not in ctx.names.runners:
            ctx.defer("runner", raw["runner"], doc, (*base, "runner"))
    if raw.get("environmentId") is not None:
        values["environment_id"] = raw["environmentId"]
        ctx.defer("environment", raw["environmentId"], doc, (*base, "environmentId"))
    if raw.get("secrets") is not None:
        values["secrets"] = tuple(raw["secrets"])
        for index, name in enumerate(raw["secrets"]):
            ctx.defer("secret", name, doc, (*base, "secrets", index))
    if raw.get("mcpServers") is not None:
        values["mcp_servers"] = read_mcp_servers(doc, (*base, "mcpServers"), ctx)
    if "workerHost" in raw:
        host = raw["workerHost"] or None
        values["worker_host"] = host
        if host is not None and host != "warp":
            ctx.defer("worker_host", host, doc, (*base, "workerHost"))
    return RunConfig(**values)


def read_mcp_servers(doc: Document, path: DocPath, ctx: BuildContext) -> dict[str, str]:
    servers: dict[str, Any] = doc.get(path) or {}
    for name, server in servers.items():
        ctx.defer("mcp_server", server["warpId"], doc, (*path, name, "warpId"), detail=name)
    return {name: server["warpId"] for name, server in sorted(servers.items())}


def _harness(doc: Document, path: DocPath, raw: dict[str, Any], ctx: BuildContext) -> HarnessLayer:
    values: dict[str, Any] = {}
    harness_type = _HARNESS_ALIASES.get(raw.get("type", ""), raw.get("type"))
    if harness_type is not None:
        values["type"] = harness_type
    if raw.get("model") is not None:
        values["model"] = raw["model"]
        kind: DeferredKind = "model" if harness_type == "oz" else "harness_model"
        ctx.defer(kind, raw["model"], doc, (*path, "model"), detail=harness_type or "")
    if "reasoningLevel" in raw:
        values["reasoning_level"] = raw["reasoningLevel"] or None
    auth = raw.get("auth")
    if auth is not None:
        values["auth"] = HarnessAuth(source=auth["source"], secret_name=auth.get("secretName"))
        if auth.get("secretName"):
            ctx.defer("secret", auth["secretName"], doc, (*path, "auth", "secretName"))
    return HarnessLayer(**values)
