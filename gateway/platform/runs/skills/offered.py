"""The skills a team offers: GET /agent, the skills the team's runs can be started from
(docs/api.md, "Skills"), and GET /agent/skills, the skills its agents list, per agent.

A variant is a skill spec (`owner/repo:skill` or `owner/repo:path/SKILL.md`, what a run's
`skill` or `config.skill_spec` takes) found by a source: today the skills the team's agents are
configured with (their `skills`), and the skills factory definition files declare, once per
repository the factory lists (`SOURCES`). Bundled skills are not listed: the
harness loads them by id (`read_skill` actions in conversations), no run is started from one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.kernel.catalog import EnvironmentSpec, access_of
from gateway.kernel.errors import InvalidRequest
from gateway.platform.runs.skills.models import (
    AgentSkill,
    Skill,
    SkillQuery,
    SkillVariant,
    VariantEnvironment,
    VariantSource,
)
from gateway.platform.runs.skills.specs import SkillSpec, parse_skill_spec

Texts = tuple[str, str]  # what the service read of a skill: (description, base prompt)
# a source: the skill specs it knows for the given teams, each with its texts
Source = Callable[[AsyncConnection, Collection[str]], Awaitable[dict[str, Texts]]]


async def agents_skills(conn: AsyncConnection, teams: Collection[str]) -> dict[str, Texts]:
    """The specs the teams' agents list in their `skills` (their content is not read here)."""
    a = t.agents
    query = select(a.c.run_defaults).where(a.c.team_uid.in_(sorted(teams)))
    found: dict[str, Texts] = {}
    for (defaults,) in await conn.execute(query):
        for spec in (defaults or {}).get("skills") or []:
            found.setdefault(spec, ("", ""))
    return found


async def factory_file_skills(conn: AsyncConnection, teams: Collection[str]) -> dict[str, Texts]:
    """The skills the teams' factory definition files declare (`skills/<name>/SKILL.md`, and
    `agents/<agent>/skills/<name>/SKILL.md`), with their description and body: one spec per
    repository the factory lists (`owner/name:skills/<name>/SKILL.md`, the file's path in the
    tree). A factory that lists no repository offers its skills nowhere a run could name."""
    f, s, a = t.factories, t.factory_skills, t.agents
    query = (
        select(f.c.repositories, s.c.name, s.c.description, s.c.playbook, a.c.definition_name)
        .select_from(s.join(f, f.c.uid == s.c.factory_uid).outerjoin(a, a.c.uid == s.c.agent_uid))
        .where(f.c.team_uid.in_(sorted(teams)))
    )
    found: dict[str, Texts] = {}
    for repositories, name, description, playbook, agent in await conn.execute(query):
        path = f"skills/{name}/SKILL.md"
        if agent is not None:
            path = f"agents/{agent}/{path}"
        for repository in repositories or []:
            spec = f"{repository['owner']}/{repository['name']}:{path}"
            try:
                parse_skill_spec(spec, "skills")
            except InvalidRequest:  # a name no skill spec can hold: not offered
                continue
            found.setdefault(spec, (description or "", playbook.strip()))
    return found


SOURCES: tuple[Source, ...] = (agents_skills, factory_file_skills)


async def list_skills(
    conn: AsyncConnection,
    teams: Collection[str],
    environments: Sequence[EnvironmentSpec],
    query: SkillQuery,
) -> list[AgentSkill]:
    """The teams' skills by name, each with its variants; `repo` keeps one repository's."""
    wanted = _repository(query.repo)
    specs: dict[str, Texts] = {}
    for source in SOURCES:
        for spec, texts in (await source(conn, teams)).items():
            specs.setdefault(spec, texts)
    parsed = {spec: parse_skill_spec(spec, "skills") for spec in specs}
    if wanted is not None:
        parsed = {s: p for s, p in parsed.items() if (p.owner.lower(), p.repo.lower()) == wanted}
    last_runs = await _last_runs(conn, teams, parsed)
    by_name: dict[str, list[SkillVariant]] = {}
    for spec, skill in sorted(parsed.items()):
        description, prompt = specs[spec]
        variant = SkillVariant(
            id=spec,
            base_prompt=prompt,
            description=description,
            environments=_environments(skill, environments, teams),
            source=VariantSource(owner=skill.owner, name=skill.repo, skill_path=skill.target),
        )
        if spec in last_runs:
            variant.last_run_timestamp = last_runs[spec]
        by_name.setdefault(skill.name, []).append(variant)
    skills = [AgentSkill(name=name, variants=variants) for name, variants in by_name.items()]
    return _sorted(skills, query.sort_by)


def _repository(repo: str | None) -> tuple[str, str] | None:
    if repo is None:
        return None
    owner, slash, name = repo.partition("/")
    if not (owner and slash and name) or "/" in name:
        raise InvalidRequest("repo: expected owner/repo")
    return owner.lower(), name.lower()


def _environments(
    skill: SkillSpec, environments: Iterable[EnvironmentSpec], teams: Collection[str]
) -> list[VariantEnvironment]:
    return [
        VariantEnvironment(uid=environment.uid, name=environment.name)
        for environment in environments
        if access_of(environment, teams) is not None
        and any(
            (linked.owner.lower(), linked.repo.lower()) == (skill.owner.lower(), skill.repo.lower())
            for linked in environment.github_repos
        )
    ]


async def _last_runs(
    conn: AsyncConnection, teams: Collection[str], specs: Collection[str]
) -> dict[str, datetime]:
    """When each spec last started a run of the teams."""
    if not specs:
        return {}
    r = t.runs
    spec = r.c.agent_config["skill_spec"].as_string()
    query = (
        select(spec, func.max(r.c.created_at))
        .where(r.c.team_uid.in_(sorted(teams)), spec.in_(sorted(specs)))
        .group_by(spec)
    )
    return {found: at for found, at in await conn.execute(query)}


def _sorted(skills: list[AgentSkill], sort_by: str) -> list[AgentSkill]:
    skills.sort(key=lambda skill: skill.name.lower())
    if sort_by == "last_run":  # most recently run first; never run last, by name
        skills.sort(key=_newest_run, reverse=True)
    return skills


def _newest_run(skill: AgentSkill) -> float:
    moments = [
        v.last_run_timestamp for v in skill.variants if isinstance(v.last_run_timestamp, datetime)
    ]
    return max(moments).timestamp() if moments else float("-inf")


async def team_skills(conn: AsyncConnection, principal: Principal) -> list[Skill]:
    """The distinct skills the agents of the caller's teams offer, by spec."""
    a = t.agents
    query = select(a.c.uid, a.c.run_defaults).where(a.c.team_uid.in_(sorted(principal.team_uids)))
    found: dict[str, Skill] = {}
    for uid, defaults in await conn.execute(query):
        for spec in (defaults or {}).get("skills") or []:
            skill = found.get(spec)
            if skill is None:
                parsed = parse_skill_spec(spec, "skills")
                skill = found[spec] = Skill(
                    skill_spec=spec,
                    name=parsed.name,
                    repository=f"{parsed.owner}/{parsed.repo}",
                    agent_uids=[],
                )
            skill.agent_uids.append(uid)
    return [found[spec] for spec in sorted(found)]
