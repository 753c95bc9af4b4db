"""automations/<name>/automation.md (and the legacy automations/<name>.md) -> drafts: the
triggers checked against the catalogue, the target agent, the prompt."""

from __future__ import annotations

from dataclasses import dataclass

from ..codes import Code
from ..diagnostics import show
from ..documents import Document
from ..model import RunConfig
from ..triggers.check import check_trigger
from ..triggers.model import Trigger
from .context import BuildContext
from .run_config import read_run_config

__all__ = ["AutomationDraft", "check_schedule_names", "draft_automation"]


@dataclass(frozen=True)
class AutomationDraft:
    doc: Document
    name: str
    enabled: bool
    agent: str | None  # None: the FOREMAN agent
    triggers: tuple[Trigger, ...]
    config: RunConfig
    prompt: str


def draft_automation(doc: Document, ctx: BuildContext) -> AutomationDraft | None:
    raw_triggers = doc.value.get("triggers")
    count = len(raw_triggers) if isinstance(raw_triggers, list) else 0
    checked = [check_trigger(doc, i, ctx) for i in range(count)]
    ok = check_schedule_names(doc, checked, ctx) & _check_agent(doc, ctx)
    if not (doc.body or "").strip():
        doc.report(
            ctx.sink,
            (),
            Code.EMPTY_BODY,
            "the automation's prompt is empty: write it below the closing `---`",
        )
        ok = False
    if not ok or not doc.clean() or any(t is None for t in checked):
        return None
    raw = doc.value
    return AutomationDraft(
        doc=doc,
        name=doc.name,
        enabled=raw.get("enabled", True),
        agent=raw.get("agent"),
        triggers=tuple(t for t in checked if t is not None),
        config=read_run_config(doc, (), ctx),
        prompt=doc.body or "",
    )


def _check_agent(doc: Document, ctx: BuildContext) -> bool:
    agent = doc.get(("agent",))
    if agent is not None and agent not in ctx.names.agents:
        doc.report(
            ctx.sink,
            ("agent",),
            Code.INVALID_REFERENCE,
            f"no agent {show(agent)} in this tree: name a directory under agents/ "
            f"({', '.join(sorted(ctx.names.agents)) or 'none declared'}), or leave "
            "`agent` out to run the FOREMAN agent",
        )
        return False
    return True


def check_schedule_names(doc: Document, triggers: list[Trigger | None], ctx: BuildContext) -> bool:
    """A schedule's name is its identity within the automation: unique, and at most one
    schedule without one."""
    seen: set[str | None] = set()
    ok = True
    for index, trigger in enumerate(triggers):
        if trigger is None or trigger.schedule is None:
            continue
        name = trigger.schedule.name
        if name in seen:
            message = (
                f"schedule name {show(name)} is used twice in this automation; names are unique"
                if name
                else "a second schedule without a `name`: at most one schedule of an "
                "automation may leave it out; name this one"
            )
            doc.report(
                ctx.sink,
                ("triggers", index, "schedule"),
                Code.DUPLICATE_VALUE,
                message,
                at_key=True,
            )
            ok = False
        seen.add(name)
    return ok
