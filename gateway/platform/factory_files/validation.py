"""The public validation of a factory tree (POST /factory-files/validate, factory-format.md §2):
what the files say on their own, with no key, no factory and nothing read from the store. The
answer is the parse's diagnostics, the references only a server holding the team's state could
resolve (`deferred_resolutions`), and the names of the checks that need that state and were not
run. Plan and apply run those checks for a team (checks.py)."""

from __future__ import annotations

from typing import Annotated

from msgspec import UNSET, Meta, Struct, UnsetType

from factory_format import CURRENT_VERSION, Diagnostic
from gateway.platform.factory_files.posted import Parsed

# what plan and apply check against a team's state that validation cannot, as the vendor's
# validator names them (factory-format.md §2)
STATE_DEPENDENT_CHECKS = (
    "provider_alias_resolution",
    "model",
    "environment",
    "secret",
    "runner_reference",
    "mcp_server",
    "integration",
    "worker_host",
    "entitlement",
)
MAX_DIAGNOSTICS = 100  # as the 422 of plan and apply lists them


class ValidatedFile(Struct, kw_only=True, forbid_unknown_fields=True):
    path: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=1000,
            description="relative to the repository root; the directory holding factory.yaml "
            "is the definition root (files outside it are ignored)",
        ),
    ]
    content: Annotated[str, Meta(description="the file's text")]


class ValidationRequest(Struct, kw_only=True, forbid_unknown_fields=True):
    files: Annotated[
        list[ValidatedFile],
        Meta(
            description="the tree's files (a SKILL.md may be left out: skills are no schema "
            "resources); each path once"
        ),
    ]


class DeferredResolution(Struct, kw_only=True, omit_defaults=True):
    kind: Annotated[
        str,
        Meta(
            description="model, harness_model, secret, runner, environment, worker_host, "
            "mcp_server, webhook, schedule, provider_name, delivery_id_header or alias"
        ),
    ]
    value: Annotated[str, Meta(description="what the tree names")]
    path: str
    line: int | None
    column: int | None
    detail: (
        Annotated[str, Meta(description="which provider key, or which harness a model is for")]
        | UnsetType
    ) = UNSET


class ValidationResult(Struct, kw_only=True, omit_defaults=True):
    schema_version: Annotated[
        str, Meta(description="the version the tree was read as (its schemaVersion)")
    ]
    valid: Annotated[bool, Meta(description="true when there is no diagnostic")]
    diagnostics: Annotated[
        list[Diagnostic],
        Meta(description="the tree's problems (the first 100), sorted by file and position"),
    ]
    deferred_resolutions: Annotated[
        list[DeferredResolution],
        Meta(
            description="references only a server with the team's state resolves (apply "
            "checks them); empty for an invalid tree"
        ),
    ]
    state_dependent_checks_not_run: Annotated[
        list[str], Meta(description="the checks that need a team's state, not run here")
    ]
    diagnostics_omitted: (
        Annotated[int, Meta(ge=1, description="problems found and not listed")] | UnsetType
    ) = UNSET


def validation_result(parsed: Parsed) -> ValidationResult:
    """The answer for a parsed tree."""
    tree = parsed.result.tree
    diagnostics = parsed.diagnostics
    shown = diagnostics[:MAX_DIAGNOSTICS]
    omitted = len(diagnostics) - len(shown) + parsed.result.omitted
    deferred = (
        []
        if tree is None
        else [
            DeferredResolution(
                kind=ref.kind,
                value=ref.value,
                path=parsed.prefix + ref.path if parsed.prefix else ref.path,
                line=ref.line,
                column=ref.column,
                detail=ref.detail or UNSET,
            )
            for ref in tree.deferred_references
        ]
    )
    return ValidationResult(
        schema_version=CURRENT_VERSION if tree is None else tree.schema_version,
        valid=tree is not None,
        diagnostics=shown,
        deferred_resolutions=deferred,
        state_dependent_checks_not_run=list(STATE_DEPENDENT_CHECKS),
        diagnostics_omitted=omitted or UNSET,
    )
