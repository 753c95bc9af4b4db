"""Drafts and built resources -> the FactoryTree, with every agent's and automation's
effective configuration resolved."""

from __future__ import annotations

from dataclasses import dataclass

from .builders.agents import AgentDraft
from .builders.automations import AutomationDraft
from .builders.context import BuildContext
from .codes import Code
from .documents import Document
from .inheritance import Problem, Resolved, override, start
from .model import (
    Agent,
    Automation,
    BenchmarkSuite,
    DeferredReference,
    Factory,
    FactoryTree,
    Runner,
    Scorer,
    Skill,
    Webhook,
)
from .positions import DocPath

__all__ = ["Built", "assemble"]


class Built:
    """What the builders produced for a tree with no diagnostics so far."""

    def __init__(self, factory: Factory, factory_doc: Document, foreman: str) -> None:
        self.factory, self.factory_doc, self.foreman = factory, factory_doc, foreman
        self.agents: list[AgentDraft] = []
        self.automations: list[AutomationDraft] = []
        self.runners: list[Runner] = []
        self.scorers: list[Scorer] = []
        self.skills: list[Skill] = []
        self.webhooks: list[Webhook] = []
        self.suites: list[BenchmarkSuite] = []


@dataclass(frozen=True)
class _Layer:
    """Where a layer of run configuration is written: problems are reported there."""

    doc: Document
    base: DocPath


def _reported(result: Resolved | Problem, ctx: BuildContext) -> Resolved | None:
    if isinstance(result, Resolved):
        return result
    layer = result.layer
    assert isinstance(layer, _Layer)
    at_key = result.key[-1] != "type"
    layer.doc.report(
        ctx.sink, (*layer.base, *result.key), Code.INVALID_HARNESS, result.message, at_key=at_key
    )
    return None


def assemble(built: Built, ctx: BuildContext) -> FactoryTree | None:
    """None once inheritance problems are reported."""
    factory = built.factory
    defaults = _reported(start(factory, _Layer(built.factory_doc, ("agentDefaults",))), ctx)
    if defaults is None:
        return None
    resolved = {d.name: _resolve_agent(d, defaults, factory, ctx) for d in built.agents}
    agents = [_agent(d, resolved[d.name], built.skills) for d in built.agents]
    automations = [_automation(d, built.foreman, resolved, factory, ctx) for d in built.automations]
    if any(a is None for a in agents) or any(a is None for a in automations):
        return None
    return FactoryTree(
        schema_version=factory.schema_version,
        factory=factory,
        agents=tuple(sorted((a for a in agents if a), key=lambda a: a.name)),
        automations=tuple(sorted((a for a in automations if a), key=lambda a: a.name)),
        runners=tuple(sorted(built.runners, key=lambda r: r.name)),
        scorers=tuple(sorted(built.scorers, key=lambda s: s.name)),
        skills=tuple(sorted(built.skills, key=lambda s: (s.agent or "", s.name))),
        webhooks=tuple(sorted(built.webhooks, key=lambda w: w.name)),
        benchmark_suites=tuple(sorted(built.suites, key=lambda s: s.slug)),
        deferred_references=tuple(sorted(set(ctx.deferred), key=_deferred_order)),
    )


def _resolve_agent(
    draft: AgentDraft, defaults: Resolved, factory: Factory, ctx: BuildContext
) -> Resolved | None:
    layer = _Layer(draft.doc, ())
    result = override(
        defaults, draft.config, factory, layer, credential_strategy=draft.credential_strategy
    )
    return _reported(result, ctx)


def _agent(draft: AgentDraft, resolved: Resolved | None, skills: list[Skill]) -> Agent | None:
    if resolved is None:
        return None
    return Agent(
        name=draft.name,
        path=draft.doc.path,
        description=draft.description,
        agent_type=draft.agent_type,
        credential_strategy=draft.credential_strategy,
        config=draft.config,
        prompt=draft.prompt,
        skills=tuple(sorted(s.name for s in skills if s.agent == draft.name)),
        effective=resolved.config,
    )


def _automation(
    draft: AutomationDraft,
    foreman: str,
    agents: dict[str, Resolved | None],
    factory: Factory,
    ctx: BuildContext,
) -> Automation | None:
    target = draft.agent or foreman
    above = agents.get(target)
    if above is None:
        return None
    resolved = _reported(override(above, draft.config, factory, _Layer(draft.doc, ())), ctx)
    if resolved is None:
        return None
    return Automation(
        name=draft.name,
        path=draft.doc.path,
        enabled=draft.enabled,
        agent=target,
        triggers=draft.triggers,
        config=draft.config,
        prompt=draft.prompt,
        effective=resolved.config,
    )


def _deferred_order(ref: DeferredReference) -> tuple[str, int, int, str, str]:
    return (ref.path, ref.line or 0, ref.column or 0, ref.kind, ref.value)
