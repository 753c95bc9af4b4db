"""The shapes of plan and apply: the posted tree, the plan of changes, the webhooks of the tree,
the diagnostics of a tree that cannot apply, and the stored definition of a factory
(docs/factory-files.md, "Plan and apply")."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from msgspec import UNSET, Meta, Struct, UnsetType

from factory_format import Diagnostic
from gateway.kernel.problem import Problem
from gateway.kernel.types import JsonObject

Action = Literal["create", "update", "delete"]
Kind = Literal[
    "factory",
    "runner",
    "agent",
    "skill",
    "agent_skill",
    "webhook",
    "automation",
    "scorer",
    "benchmark_suite",
]
KINDS: tuple[Kind, ...] = get_args(Kind)  # the order plans and definitions list resources in


class PostedTree(Struct, kw_only=True, forbid_unknown_fields=True):
    files: Annotated[
        JsonObject,
        Meta(
            description="{path relative to the repository root: text}; the directory holding "
            "factory.yaml is the definition root (files outside it are ignored)"
        ),
    ]
    factory_uid: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=64,
                description="the factory the tree defines; without it, the factory of the "
                "tree's name in the caller's team, created when there is none",
            ),
        ]
        | None
    ) = None


class Change(Struct, kw_only=True):
    kind: Kind
    name: Annotated[str, Meta(description="the resource's name in the tree (its path)")]
    action: Action
    fields: (
        Annotated[list[str], Meta(description="update: the dotted paths of what changes")]
        | UnsetType
    ) = UNSET


class TreeWebhook(Struct, kw_only=True):
    name: Annotated[str, Meta(description="webhooks/<name>.yaml")]
    uid: Annotated[str | None, Meta(description="null until the file first applies")]
    ingress_url: Annotated[
        str | None, Meta(description="url_token mode ends in the placeholder {token}")
    ]


class Plan(Struct, kw_only=True):
    factory_uid: Annotated[
        str | None, Meta(description="null in a plan for a factory still to be created")
    ]
    changes: Annotated[
        list[Change], Meta(description="empty when the factory matches the tree already")
    ]
    webhooks: list[TreeWebhook]
    warnings: Annotated[
        list[Diagnostic],
        Meta(
            description="problems that do not stop apply, as diagnostics (FF_NEVER_FIRES: a "
            "trigger that never fires here; FF_UNLISTED_MODEL: a model id outside this server's "
            "catalogue); empty when there are none"
        ),
    ] = []


class InvalidTreeProblem(Problem, kw_only=True):
    """The 422 of plan and apply: every problem of the tree, nothing changed."""

    code: Literal["invalid_factory_tree"]
    diagnostics: Annotated[
        list[Diagnostic],
        Meta(
            description="the tree's problems as factory_format reports them, sorted by file "
            "and position: the first 100, and at most 20 of one file"
        ),
    ]
    diagnostics_omitted: (
        Annotated[
            int,
            Meta(
                ge=1,
                description="how many more problems were found and not listed (absent when "
                "every one is listed); a file's scan stops soon after its 20th problem, so "
                "fixing the listed ones may reveal others",
            ),
        ]
        | UnsetType
    ) = UNSET


class StoredResource(Struct, kw_only=True):
    kind: Kind
    name: str
    uid: str
    definition: Annotated[
        JsonObject,
        Meta(
            description="its stored state in the comparable form plan compares (the file "
            "keys in snake_case, inheritance resolved under `effective`)"
        ),
    ]


class StoredDefinition(Struct, kw_only=True):
    factory_uid: str
    foreman_agent_uid: str | None
    resources: list[StoredResource]
