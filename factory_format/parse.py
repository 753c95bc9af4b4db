"""A whole tree -> its typed model, or every problem of it at once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from msgspec import Struct

from .assemble import Built, assemble
from .builders.agents import build_skill, draft_agent
from .builders.automations import draft_automation
from .builders.benchmarks import build_suite, build_task
from .builders.context import BuildContext, TreeNames
from .builders.factory import build_factory, schema_version_of
from .builders.runners import build_runner
from .builders.scorers import build_scorer
from .builders.tree import check_tree, foreman_of
from .builders.webhooks import build_webhook
from .codes import Code
from .diagnostics import Diagnostic, Diagnostics, show
from .documents import Document, load_document
from .layout import FileKind
from .model import BenchmarkSuite, FactoryTree
from .schemas import CURRENT_VERSION, VERSIONS, validator_for
from .shape_check import check_shape
from .skill_files import with_skill_files
from .sources import SourceFile, collect_sources
from .yaml_strict import NodeBudget

__all__ = ["ParseResult", "parse_tree"]


class ParseResult(Struct, frozen=True, kw_only=True):
    """`tree` is None whenever there is a diagnostic: a tree with any problem applies
    nothing."""

    diagnostics: tuple[Diagnostic, ...]
    tree: FactoryTree | None = None
    omitted: int = 0  # problems found beyond MAX_FILE_PROBLEMS of a file, not listed

    @property
    def ok(self) -> bool:
        return self.tree is not None


def parse_tree(files: Mapping[str, str], *, found: Iterable[Diagnostic] = ()) -> ParseResult:
    """Parse and check a tree given as {path relative to the directory holding factory.yaml:
    text}. `found`: problems already found while reading the files (a directory's symlinks)."""
    sink = Diagnostics()
    sink.extend(list(found))
    sources = collect_sources(files, sink)
    if sources is None:
        return _result(sink)
    if not _has_factory(sources, files, sink):
        return _result(sink)
    factory_source = next(s for s in sources if s.kind is FileKind.FACTORY)
    budget = NodeBudget()  # the YAML values all files may hold, taken file by file
    factory_doc = load_document(factory_source, sink, budget) if factory_source.readable else None
    if not _version_ok(factory_doc, sink):
        return _result(sink)
    docs = [factory_doc] if factory_doc else []
    docs += [
        d
        for s in sources
        if s.readable
        and s is not factory_source
        and (d := load_document(s, sink, budget)) is not None
    ]
    for doc in docs:
        validator = validator_for(doc.kind, CURRENT_VERSION)
        if validator is not None:
            check_shape(doc, validator, sink)
    ctx = BuildContext(sink, TreeNames.of(sources))
    check_tree(sources, docs, ctx)
    built = _build(docs, factory_doc, ctx)
    if built is None or len(sink):
        return _result(sink)
    tree = assemble(built, ctx)
    if tree is None or len(sink):
        return _result(sink)
    return _result(sink, with_skill_files(tree, files))


def _result(sink: Diagnostics, tree: FactoryTree | None = None) -> ParseResult:
    return ParseResult(diagnostics=sink.sorted(), tree=tree, omitted=sink.omitted)


def _has_factory(sources: list[SourceFile], files: Mapping[str, str], sink: Diagnostics) -> bool:
    if any(s.kind is FileKind.FACTORY for s in sources):
        return True
    deeper = sorted(p for p in files if p.endswith("/factory.yaml"))
    hint = (
        f"; {deeper[0]} is one level down: paths are relative to the directory holding factory.yaml"
        if deeper
        else ""
    )
    sink.add(
        "factory.yaml",
        None,
        Code.MISSING_FACTORY,
        f"the tree has no factory.yaml at its root{hint}; every factory tree has one "
        "(schemaVersion, name, repositories, agentDefaults)",
    )
    return False


def _version_ok(factory_doc: Document | None, sink: Diagnostics) -> bool:
    """An unknown version stops the parse: another version's rules are never applied."""
    if factory_doc is None:
        return True  # factory.yaml does not load: its problems are reported; check the rest
    version = schema_version_of(factory_doc)
    if version in VERSIONS:
        return True
    factory_doc.report(
        sink,
        ("schemaVersion",),
        Code.UNSUPPORTED_VERSION,
        f"schemaVersion {show(version)} is not supported by this server; "
        f"supported: {', '.join(VERSIONS)} (leaving it out means "
        f"{CURRENT_VERSION})",
    )
    return False


def _build(docs: list[Document], factory_doc: Document | None, ctx: BuildContext) -> Built | None:
    by_kind: dict[FileKind, list[Document]] = {}
    for doc in docs:
        by_kind.setdefault(doc.kind, []).append(doc)
    factory = build_factory(factory_doc, ctx) if factory_doc else None
    foreman = foreman_of(docs)
    built = Built(factory, factory_doc, foreman) if factory and factory_doc and foreman else None
    agents = [draft_agent(d, ctx) for d in by_kind.get(FileKind.AGENT, [])]
    automations = [draft_automation(d, ctx) for d in by_kind.get(FileKind.AUTOMATION, [])]
    runners = [build_runner(d, ctx) for d in by_kind.get(FileKind.RUNNER, [])]
    scorers = [build_scorer(d, ctx) for d in by_kind.get(FileKind.SCORER, [])]
    skills = [
        build_skill(d, ctx)
        for d in (*by_kind.get(FileKind.SKILL, []), *by_kind.get(FileKind.AGENT_SKILL, []))
    ]
    webhooks = [build_webhook(d, ctx) for d in by_kind.get(FileKind.WEBHOOK, [])]
    suites = _suites(by_kind, ctx)
    if built is None:
        return None
    built.agents = [a for a in agents if a]
    built.automations = [a for a in automations if a]
    built.runners = [r for r in runners if r]
    built.scorers = [s for s in scorers if s]
    built.skills = [s for s in skills if s]
    built.webhooks = [w for w in webhooks if w]
    built.suites = [s for s in suites if s]
    return built


def _suites(
    by_kind: dict[FileKind, list[Document]], ctx: BuildContext
) -> list[BenchmarkSuite | None]:
    built = {
        (d.source.placement.owner, d.name): build_task(d)
        for d in by_kind.get(FileKind.BENCHMARK_TASK, [])
    }
    for owner in sorted(set(ctx.names.tasks) - ctx.names.suites):
        ctx.sink.add(
            f"benchmarks/{owner}/suite.yaml",
            None,
            Code.INVALID_REFERENCE,
            f"benchmarks/{owner}/tasks/ holds tasks but the suite has no suite.yaml: "
            "add it, or remove the tasks",
        )
    return [
        build_suite(
            d, {slug: built.get((d.name, slug)) for slug in ctx.names.tasks.get(d.name, ())}, ctx
        )
        for d in by_kind.get(FileKind.BENCHMARK_SUITE, [])
    ]
