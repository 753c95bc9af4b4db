"""agents/<name>/agent.md and the skills (skills/**/SKILL.md, agents/<name>/skills/**/SKILL.md)
-> drafts of agents (inheritance is resolved once every layer is read) and skills."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..codes import Code
from ..diagnostics import show
from ..documents import Document
from ..model import AgentType, CredentialStrategy, RunConfig, Skill
from .context import BuildContext
from .run_config import read_run_config

__all__ = ["AgentDraft", "build_skill", "draft_agent"]

_AGENT_TYPE_ALIASES: dict[str, AgentType] = {"MAIN": "FOREMAN"}


@dataclass(frozen=True)
class AgentDraft:
    doc: Document
    name: str
    description: str | None
    agent_type: AgentType
    credential_strategy: CredentialStrategy | None
    config: RunConfig
    prompt: str


def agent_type_of(doc: Document) -> AgentType | None:
    """The canonical agentType of an agent document; None when it cannot be read."""
    if not doc.clean(("agentType",)):
        return None
    raw = doc.value.get("agentType", "CUSTOM")
    return _AGENT_TYPE_ALIASES.get(raw, raw)  # type: ignore[no-any-return]


def draft_agent(doc: Document, ctx: BuildContext) -> AgentDraft | None:
    if not doc.clean():
        return None
    raw = doc.value
    agent_type = agent_type_of(doc)
    assert agent_type is not None  # the document is clean
    return AgentDraft(
        doc=doc,
        name=doc.name,
        description=raw.get("description"),
        agent_type=agent_type,
        credential_strategy=raw.get("credentialStrategy"),
        config=read_run_config(doc, (), ctx),
        prompt=doc.body or "",
    )


_SKILL_TEXT_KEYS = ("name", "description")


def build_skill(doc: Document, ctx: BuildContext) -> Skill | None:
    """Skills use the general skills format: `name` and `description` are read, any other
    frontmatter key is kept as written (other tools define more)."""
    owner = doc.source.placement.owner or None
    ok = True
    if owner is not None and owner not in ctx.names.agents:
        doc.report(
            ctx.sink,
            (),
            Code.INVALID_REFERENCE,
            f"a skill of agent {show(owner)}, which this tree does not declare: add "
            f"agents/{owner}/agent.md or move the skill to skills/",
        )
        ok = False
    raw: dict[str, Any] = doc.value
    for key in _SKILL_TEXT_KEYS:
        if key in raw and not isinstance(raw[key], str):
            doc.report(ctx.sink, (key,), Code.INVALID_TYPE, f"`{key}` must be a string")
            ok = False
    if not ok:
        return None
    return Skill(
        name=doc.name,
        path=doc.path,
        agent=owner,
        title=raw.get("name") or doc.name.rsplit("/", 1)[-1],
        description=raw.get("description"),
        frontmatter={k: v for k, v in sorted(raw.items()) if k not in _SKILL_TEXT_KEYS},
        playbook=doc.body or "",
    )
