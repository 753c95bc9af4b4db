"""factory.yaml -> Factory: duplicate repositories (compared case-insensitively) and
integrations, Linear with Jira, cloudProviders over the legacy `providers`."""

from __future__ import annotations

from typing import Any

from ..codes import Code
from ..diagnostics import show
from ..documents import Document
from ..model import AwsProvider, CloudProviders, Factory, GcpProvider, Integration, Repository
from .context import BuildContext
from .run_config import read_mcp_servers, read_run_config

__all__ = ["build_factory", "schema_version_of"]

DEFAULT_VERSION = "v1alpha1"


def schema_version_of(doc: Document) -> Any:
    """The declared version; a tree that leaves it out is v1alpha1."""
    return doc.value.get("schemaVersion", DEFAULT_VERSION)


def build_factory(doc: Document, ctx: BuildContext) -> Factory | None:
    ok = _check_repositories(doc, ctx) & _check_integrations(doc, ctx)
    if not ok or not doc.clean():
        return None
    raw = doc.value
    for index, name in enumerate(raw.get("secrets") or []):
        ctx.defer("secret", name, doc, ("secrets", index))
    if raw.get("alias") is not None and raw["alias"].strip():
        ctx.defer("alias", raw["alias"].strip(), doc, ("alias",))  # unique in the workspace
    return Factory(
        schema_version=schema_version_of(doc),
        name=raw["name"],
        description=raw.get("description"),
        alias=raw["alias"].strip() if raw.get("alias") is not None else None,
        credential_strategy=raw.get("credentialStrategy"),
        repositories=tuple(
            Repository(owner=r["owner"], name=r["name"]) for r in raw["repositories"]
        ),
        secrets=tuple(raw.get("secrets") or ()),
        mcp_servers=read_mcp_servers(doc, ("mcpServers",), ctx),
        cloud_providers=_cloud_providers(raw.get("cloudProviders") or raw.get("providers")),
        integrations=_integrations(raw),
        agent_defaults=read_run_config(doc, ("agentDefaults",), ctx),
        code_forges=tuple(raw["codeForges"]) if raw.get("codeForges") is not None else None,
    )


def _check_repositories(doc: Document, ctx: BuildContext) -> bool:
    seen: dict[tuple[str, str], int] = {}
    ok = True
    for index, repo in enumerate(doc.get(("repositories",)) or []):
        key = (repo["owner"].lower(), repo["name"].lower())
        if key in seen:
            doc.report(
                ctx.sink,
                ("repositories", index),
                Code.DUPLICATE_VALUE,
                f"repository {repo['owner']}/{repo['name']} is listed twice (names "
                f"compare without case; see item {seen[key]}); remove one",
            )
            ok = False
        seen.setdefault(key, index)
    return ok


def _check_integrations(doc: Document, ctx: BuildContext) -> bool:
    types: dict[str, int] = {}
    ok = True
    for index, item in enumerate(doc.get(("integrations",)) or []):
        kind = item["type"]
        if kind in types:
            doc.report(
                ctx.sink,
                ("integrations", index, "type"),
                Code.DUPLICATE_VALUE,
                f"integration {show(kind)} is listed twice; remove one",
            )
            ok = False
        types.setdefault(kind, index)
    if "linear" in types and "jira" in types:
        later = max(types["linear"], types["jira"])
        doc.report(
            ctx.sink,
            ("integrations", later, "type"),
            Code.CONFLICTING_FIELDS,
            "a factory attaches Linear or Jira, not both; remove one",
        )
        ok = False
    return ok


def _integrations(raw: dict[str, Any]) -> tuple[Integration, ...] | None:
    items = raw.get("integrations")
    if items is None:
        return None
    return tuple(
        Integration(
            type=item["type"],
            auto_respond_to_thread_replies=(
                item.get("microsoft-teams", {}).get("autoRespondToThreadReplies", True)
                if item["type"] == "microsoft-teams"
                else None
            ),
        )
        for item in items
    )


def _cloud_providers(raw: dict[str, Any] | None) -> CloudProviders | None:
    if not raw:
        return None
    gcp, aws = raw.get("gcp"), raw.get("aws")
    return CloudProviders(
        gcp=GcpProvider(
            project_number=gcp["projectNumber"],
            workload_identity_federation_pool_id=gcp["workloadIdentityFederationPoolId"],
            workload_identity_federation_provider_id=gcp["workloadIdentityFederationProviderId"],
            service_account_email=gcp.get("serviceAccountEmail"),
        )
        if gcp
        else None,
        aws=AwsProvider(role_arn=aws["roleArn"]) if aws else None,
    )
