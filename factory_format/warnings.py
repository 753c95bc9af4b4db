"""Warnings: what a tree may declare but a given server can never act on. They never stop a
tree from applying; plan and apply answer them beside the plan (`FF_NEVER_FIRES`)."""

from __future__ import annotations

from collections.abc import Collection

from .codes import Code
from .diagnostics import Diagnostic
from .model import FactoryTree

__all__ = ["never_firing"]

# what a Slack id looks like, per canonical key, for the message
_SLACK_IDS = {"channel_ids": "C0123ABCD", "user_ids": "U0123ABCD", "item_user_ids": "U0123ABCD"}


def never_firing(tree: FactoryTree, providers: Collection[str]) -> list[Diagnostic]:
    """The triggers of `tree` that can never fire on a server whose events come from
    `providers`: a trigger of another provider (Microsoft Teams, with no connection here), and
    a Slack filter by channel or user *name* (Slack's events carry ids only, so it never
    matches). One warning per automation and cause, at the first place the tree names it."""
    found: dict[tuple[str, str], Diagnostic] = {}
    for automation in tree.automations:
        for trigger in automation.triggers:
            if trigger.provider in providers:
                continue
            found.setdefault(
                (automation.path, trigger.provider),
                Diagnostic(
                    path=automation.path,
                    line=None,
                    column=None,
                    code=Code.NEVER_FIRES.value,
                    message=f"trigger {trigger.provider} / {trigger.event}: this server has no "
                    f"{trigger.provider} connection, so the trigger never fires here",
                ),
            )
    for reference in tree.deferred_references:
        provider, _, key = reference.detail.partition(" ")
        if reference.kind != "provider_name" or provider != "slack" or "slack" not in providers:
            continue
        found.setdefault(
            (reference.path, reference.detail),
            Diagnostic(
                path=reference.path,
                line=reference.line,
                column=reference.column,
                code=Code.NEVER_FIRES.value,
                message=f"slack {key}: {reference.value!r} is a name, and Slack's events carry "
                f"ids only: this filter never matches, so the trigger never fires; write the "
                f"ids ({key}: [{_SLACK_IDS.get(key, 'C0123ABCD')}])",
            ),
        )
    return sorted(found.values(), key=Diagnostic.sort_key)
