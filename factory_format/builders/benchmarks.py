"""benchmarks/<suite>/suite.yaml and tasks/<task>.yaml -> BenchmarkSuite: the agent is
declared, every task file is listed exactly once and every listed task has its file."""

from __future__ import annotations

from ..codes import Code
from ..diagnostics import show
from ..documents import Document
from ..model import BenchmarkSuite, BenchmarkTask
from .context import BuildContext

__all__ = ["build_suite", "build_task"]


def build_task(doc: Document) -> BenchmarkTask | None:
    if not doc.clean():
        return None
    raw = doc.value
    return BenchmarkTask(
        slug=doc.name,
        path=doc.path,
        title=raw["title"],
        prompt=raw["prompt"],
        success_criteria=raw["successCriteria"],
        source_run_id=raw.get("sourceRunId"),
        starting_repo_refs=tuple(raw.get("startingRepoRefs") or ()),
    )


def build_suite(
    doc: Document, tasks: dict[str, BenchmarkTask | None], ctx: BuildContext
) -> BenchmarkSuite | None:
    """`tasks`: the suite's task files by slug (None for one that failed)."""
    ok = _check_agent(doc, ctx) & _check_listing(doc, tasks, ctx)
    if not ok or not doc.clean():
        return None
    raw = doc.value
    listed = [tasks[slug] for slug in raw.get("tasks") or []]
    if any(task is None for task in listed):
        return None
    return BenchmarkSuite(
        slug=doc.name,
        path=doc.path,
        name=raw["name"],
        description=raw.get("description"),
        agent=raw["agent"],
        tasks=tuple(task for task in listed if task is not None),
    )


def _check_agent(doc: Document, ctx: BuildContext) -> bool:
    agent = doc.get(("agent",))
    if agent is not None and agent not in ctx.names.agents:
        doc.report(
            ctx.sink,
            ("agent",),
            Code.INVALID_REFERENCE,
            f"no agent {show(agent)} in this tree: name a directory under agents/",
        )
        return False
    return True


def _check_listing(
    doc: Document, tasks: dict[str, BenchmarkTask | None], ctx: BuildContext
) -> bool:
    listed = doc.get(("tasks",))
    if listed is None and not doc.clean(("tasks",)):
        return False
    ok = True
    for index, slug in enumerate(listed or []):
        if slug not in tasks:
            doc.report(
                ctx.sink,
                ("tasks", index),
                Code.INVALID_REFERENCE,
                f"task {show(slug)} has no file: add benchmarks/{doc.name}/tasks/{slug}.yaml "
                "or remove it from the list",
            )
            ok = False
    for slug in sorted(set(tasks) - set(listed or [])):
        at = ("tasks",) if listed is not None else ()
        doc.report(
            ctx.sink,
            at,
            Code.INVALID_REFERENCE,
            f"benchmarks/{doc.name}/tasks/{slug}.yaml is not listed in `tasks`; list "
            "every task file once, in the order the suite runs them",
            at_key=True,
        )
        ok = False
    return ok
