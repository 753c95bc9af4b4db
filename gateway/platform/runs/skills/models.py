"""The shapes of skills: GET /agent, the skills runs of the team can be started from, in the
official clients' AgentSkill shape (a skill by name, with a variant per repository that holds
it); GET /agent/skills, the skills a team's agents offer."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from gateway.foundation.api.fields import Timestamp


class SkillQuery(Struct, kw_only=True):
    repo: Annotated[str, Meta(max_length=200, description="owner/repo: only its skills")] | None = (
        None
    )
    sort_by: Literal["name", "last_run"] = "name"
    refresh: Annotated[bool, Meta(description="accepted; the list is never cached")] = False
    include_malformed_skills: Annotated[
        bool, Meta(description="accepted; no variant here is malformed (see docs/api.md)")
    ] = False


class VariantEnvironment(Struct, kw_only=True):
    uid: str
    name: str


class VariantSource(Struct, kw_only=True):
    owner: str
    name: Annotated[str, Meta(description="the repository")]
    skill_path: Annotated[str, Meta(description="the SKILL.md path, or the skill's name")]
    worker_host: str | UnsetType = UNSET


class SkillVariant(Struct, kw_only=True):
    id: Annotated[str, Meta(description="{owner}/{repo}:{skill_path}: a run's skill_spec")]
    base_prompt: Annotated[str, Meta(description="empty when the service has not read it")]
    description: str
    environments: Annotated[
        list[VariantEnvironment], Meta(description="yours that link its repository")
    ]
    source: VariantSource
    last_run_timestamp: (
        Annotated[Timestamp, Meta(description="the newest run of yours started from it")]
        | UnsetType
    ) = UNSET


class AgentSkill(Struct, kw_only=True):
    name: str
    variants: list[SkillVariant]


class AgentSkills(Struct, kw_only=True):
    agents: list[AgentSkill]


class Skill(Struct, kw_only=True):
    skill_spec: str
    name: str
    repository: str
    agent_uids: Annotated[list[str], Meta(description="the agents that offer it")]


class Skills(Struct):
    skills: list[Skill]
