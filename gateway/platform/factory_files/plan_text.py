"""A plan as a person reads it (`gateway apply` without --json): one line per change, `+ create`,
`~ update (fields)`, `- delete`, the tree's webhooks with their ingress URLs, and a summary
line; colour only when asked (a terminal, and NO_COLOR unset: the caller decides)."""

from __future__ import annotations

from collections import Counter

from factory_format import Diagnostic
from gateway.platform.factory_files.models import Change, Plan

MARKS = {"create": "+", "update": "~", "delete": "-"}
# ANSI colours of the marks: green, yellow, red
COLOURS = {"create": "32", "update": "33", "delete": "31"}


def plan_lines(plan: Plan, *, applied: bool, colour: bool = False) -> list[str]:
    """What `gateway apply` prints: `applied` says whether the plan was carried out (else it is
    what a --dry-run would do)."""
    factory = plan.factory_uid or "a new factory"
    if not plan.changes:
        return [f"No changes: {factory} matches the tree.", *_webhook_lines(plan)]
    lines = [f"{'Applied to' if applied else 'Plan for'} {factory}:"]
    lines += [_change_line(change, colour) for change in plan.changes]
    lines += _webhook_lines(plan)
    counts = Counter(change.action for change in plan.changes)
    if applied:
        summary = (
            f"Applied: {counts['create']} created, {counts['update']} updated, "
            f"{counts['delete']} deleted."
        )
    else:
        summary = (
            f"Plan: {counts['create']} to create, {counts['update']} to update, "
            f"{counts['delete']} to delete (nothing changed)."
        )
    return [*lines, summary]


def diagnostic_line(diagnostic: Diagnostic) -> str:
    """`path:line:column: CODE: message` (what the place has of line and column)."""
    parts = (diagnostic.path, diagnostic.line, diagnostic.column)
    where = ":".join(str(part) for part in parts if part is not None)
    return f"{where}: {diagnostic.code}: {diagnostic.message}"


def _change_line(change: Change, colour: bool) -> str:
    mark = MARKS[change.action]
    if colour:
        mark = f"\033[{COLOURS[change.action]}m{mark}\033[0m"
    line = f"  {mark} {change.action} {change.kind} {change.name}"
    if isinstance(change.fields, list) and change.fields:
        line += f" ({', '.join(change.fields)})"
    return line


def _webhook_lines(plan: Plan) -> list[str]:
    lines = []
    for hook in plan.webhooks:
        url = hook.ingress_url or "(its ingress URL once it is created)"
        lines.append(f"  webhook {hook.name}: {url}")
    return lines
