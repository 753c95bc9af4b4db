"""The plan: what applying a tree would create, update and delete, per resource, with the fields
an update changes (dotted paths of the comparable forms). A tree applied and planned again gives
an empty plan."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from factory_format import FactoryTree, changed_fields
from factory_format.model import ResourceKey
from gateway.platform.factory_files.forms import Form, tree_forms
from gateway.platform.factory_files.models import KINDS, Change, Kind
from gateway.platform.factory_files.state import StoredState

# factory.yaml keys whose absence leaves the stored value alone (None in the model)
LEFT_ALONE_WHEN_ABSENT = ("credential_strategy", "integrations")
FOREMAN = "foreman"  # the field of a factory change that makes another agent its foreman


def plan_changes(
    tree: FactoryTree, state: StoredState, stale: Mapping[ResourceKey, list[str]] | None = None
) -> list[Change]:
    """`stale`: fields that changed outside the forms (a webhook whose managed secret has
    another value than the one it read at its last apply: `secret_value`)."""
    wanted = tree_forms(tree)
    factory = _factory_change(tree, state, wanted[("factory", "")])
    changes = [] if factory is None else [factory]
    for key in sorted(set(wanted) | set(state.resources)):
        kind, name = cast(Kind, key[0]), key[1]
        if kind == "factory":
            continue
        stored = state.resources.get(key)
        if stored is None:
            changes.append(Change(kind=kind, name=name, action="create"))
        elif key not in wanted:
            changes.append(Change(kind=kind, name=name, action="delete"))
        else:
            fields = changed_fields(stored.form, wanted[key]) + list((stale or {}).get(key, []))
            if fields:
                changes.append(Change(kind=kind, name=name, action="update", fields=fields))
    return sorted(changes, key=lambda c: (KINDS.index(c.kind), c.name))


def _factory_change(tree: FactoryTree, state: StoredState, wanted: Form) -> Change | None:
    name = tree.factory.name
    stored = state.resources.get(("factory", ""))
    if stored is None:
        return Change(kind="factory", name=name, action="create")
    old, new = dict(stored.form), dict(wanted)
    for key in LEFT_ALONE_WHEN_ABSENT:
        if new.get(key) is None:
            old.pop(key, None)
            new.pop(key, None)
    fields = changed_fields(old, new)
    foreman = state.agents.get(tree_foreman(tree))  # None: an agent this apply creates
    if state.factory is not None and (
        foreman is None or state.factory.foreman_agent_uid != foreman
    ):
        fields.append(FOREMAN)
    return Change(kind="factory", name=name, action="update", fields=fields) if fields else None


def tree_foreman(tree: FactoryTree) -> str:
    """The name of the tree's FOREMAN agent (the parser guarantees exactly one)."""
    return next(agent.name for agent in tree.agents if agent.agent_type == "FOREMAN")
