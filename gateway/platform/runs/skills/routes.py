"""GET /agent: the skills the caller's teams can start runs from (the official clients'
`agent.list()`)."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Query, Routes
from gateway.platform.runs.skills.models import AgentSkills, SkillQuery
from gateway.platform.runs.skills.offered import list_skills

routes = Routes("runs")


@routes.get(
    "/agent",
    "Skills runs can be started from",
    response=AgentSkills,
    errors=(400, 401, 403),
    team=True,
    notes="Each variant's id is a skill spec a run's `skill` takes. Sources: the skills the "
    "team's agents list (docs/api.md). GET /agent/skills answers the same skills per agent.",
)
async def agent_skills_endpoint(request: Request, query: Query[SkillQuery]) -> AgentSkills:
    principal = await principal_of(request, team_scoped=True)
    teams = {principal.active_team_uid} if principal.active_team_uid else principal.team_uids
    services = services_of(request)
    async with services.database.read() as conn:
        skills = await list_skills(conn, teams, services.settings.environments, query.read())
    return AgentSkills(agents=skills)
