"""Rules across files: exactly one FOREMAN agent, unique benchmark suite names, the number
of webhooks a factory may have."""

from __future__ import annotations

from ..codes import Code
from ..diagnostics import show
from ..documents import Document
from ..layout import FileKind
from ..sources import TREE, SourceFile
from .agents import agent_type_of
from .context import BuildContext

__all__ = ["MAX_WEBHOOKS", "check_tree", "foreman_of"]

MAX_WEBHOOKS = 20


def foreman_of(docs: list[Document]) -> str | None:
    foremen = [d.name for d in docs if d.kind is FileKind.AGENT and agent_type_of(d) == "FOREMAN"]
    return foremen[0] if len(foremen) == 1 else None


def check_tree(sources: list[SourceFile], docs: list[Document], ctx: BuildContext) -> None:
    _check_foreman(sources, docs, ctx)
    _check_suite_names(docs, ctx)
    webhooks = [s for s in sources if s.kind is FileKind.WEBHOOK]
    if len(webhooks) > MAX_WEBHOOKS:
        ctx.sink.add(
            TREE,
            None,
            Code.LIMIT_EXCEEDED,
            f"the tree declares {len(webhooks)} webhooks; a factory may have at most "
            f"{MAX_WEBHOOKS}",
        )


def _check_foreman(sources: list[SourceFile], docs: list[Document], ctx: BuildContext) -> None:
    agents = [d for d in docs if d.kind is FileKind.AGENT]
    types = {d.name: agent_type_of(d) for d in agents}
    foremen = sorted(name for name, kind in types.items() if kind == "FOREMAN")
    if len(foremen) > 1:
        for doc in agents:
            if doc.name in foremen:
                doc.report(
                    ctx.sink,
                    ("agentType",),
                    Code.FOREMAN,
                    f"agents {', '.join(foremen)} are all FOREMAN (or MAIN); exactly one "
                    "agent is the foreman: give the others another agentType",
                )
        return
    declared = sum(1 for s in sources if s.kind is FileKind.AGENT)
    unreadable = declared - sum(1 for kind in types.values() if kind is not None)
    if not foremen and not unreadable:
        ctx.sink.add(
            TREE,
            None,
            Code.FOREMAN,
            "no agent is the FOREMAN: set `agentType: FOREMAN` in the frontmatter of "
            "one agents/<name>/agent.md (the entry point and the default agent of "
            "automations)",
        )


def _check_suite_names(docs: list[Document], ctx: BuildContext) -> None:
    seen: dict[str, str] = {}
    for doc in docs:
        name = doc.get(("name",)) if doc.kind is FileKind.BENCHMARK_SUITE else None
        if not isinstance(name, str):
            continue
        if name in seen:
            doc.report(
                ctx.sink,
                ("name",),
                Code.DUPLICATE_VALUE,
                f"suite name {show(name)} is also the name of {seen[name]}; names are "
                "unique in the factory",
            )
        seen.setdefault(name, doc.path)
