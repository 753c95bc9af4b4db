"""What every builder shares: the diagnostics sink, the deferred references found so far, and
the names the tree declares (known from paths, even for files that failed to parse)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..diagnostics import Diagnostics
from ..documents import Document
from ..layout import FileKind
from ..model import DeferredKind, DeferredReference
from ..positions import DocPath
from ..sources import SourceFile

__all__ = ["BuildContext", "TreeNames"]


@dataclass(frozen=True)
class TreeNames:
    agents: frozenset[str]
    runners: frozenset[str]
    webhooks: frozenset[str]
    suites: frozenset[str]
    tasks: dict[str, tuple[str, ...]]  # suite -> its task files' slugs, sorted

    @classmethod
    def of(cls, sources: list[SourceFile]) -> TreeNames:
        def names(kind: FileKind) -> frozenset[str]:
            return frozenset(s.placement.name for s in sources if s.kind is kind)

        tasks: dict[str, list[str]] = {}
        for source in sources:
            if source.kind is FileKind.BENCHMARK_TASK:
                tasks.setdefault(source.placement.owner, []).append(source.placement.name)
        return cls(
            agents=names(FileKind.AGENT),
            runners=names(FileKind.RUNNER),
            webhooks=names(FileKind.WEBHOOK),
            suites=names(FileKind.BENCHMARK_SUITE),
            tasks={suite: tuple(sorted(slugs)) for suite, slugs in tasks.items()},
        )


@dataclass
class BuildContext:
    sink: Diagnostics
    names: TreeNames
    deferred: list[DeferredReference] = field(default_factory=list)

    def defer(
        self, kind: DeferredKind, value: str, doc: Document, path: DocPath, detail: str = ""
    ) -> None:
        where = doc.positions.value(path)
        self.deferred.append(
            DeferredReference(
                kind=kind,
                value=value,
                path=doc.path,
                line=where.line,
                column=where.column,
                detail=detail,
            )
        )
