"""GET /agent/environments: the cloud environments a caller may run in (from configuration),
with the field names of the official client's CloudEnvironment."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.auth import principal_of, services_of
from gateway.api.fields import Timestamp
from gateway.api.http import json_response
from gateway.api.routing import Query, Routes
from gateway.platform.catalog import environments
from gateway.platform.catalog.environments import VisibleEnvironment
from gateway.platform.runs.models import RunState


class GitHubRepo(Struct):
    owner: str
    repo: str


class EnvironmentConfig(Struct, kw_only=True):
    name: str
    description: str | None
    docker_image: str | None
    github_repos: list[GitHubRepo]
    setup_commands: list[str]


class Scope(Struct):
    type: Literal["Team"]
    uid: str


class LastTask(Struct, kw_only=True):
    """The newest run (of the caller's teams) that selected the environment."""

    id: Annotated[str, Meta(description="its run id")]
    title: str
    state: RunState
    created_at: Timestamp
    updated_at: Timestamp
    started_at: Timestamp | None


class Environment(Struct, kw_only=True):
    uid: str
    config: EnvironmentConfig
    last_updated: Timestamp
    setup_failed: Annotated[
        bool, Meta(description="the newest run in it failed while setting the environment up")
    ]
    access: Annotated[
        Literal["owned", "guest", "link_shared"],
        Meta(description="owned by a team of yours, shared with one as a guest, or by link"),
    ]
    scope: Scope | UnsetType = UNSET
    last_task_created: LastTask | UnsetType = UNSET
    last_task_run_timestamp: Timestamp | UnsetType = UNSET


class EnvironmentList(Struct):
    environments: list[Environment]


class EnvironmentQuery(Struct, kw_only=True):
    sort_by: Annotated[
        Literal["name", "last_updated"], Meta(description="last_updated: newest first")
    ] = "last_updated"


routes = Routes("environments")


@routes.get(
    "/agent/environments",
    "List the environments you may run in",
    response=EnvironmentList,
    errors=(400, 401, 403),
    team=True,
    notes="Owned by the active team (else any of yours), shared with it as a guest, or "
    "link-shared. Configured with GATEWAY_ENVIRONMENTS[_FILE].",
)
async def list_endpoint(request: Request, query: Query[EnvironmentQuery]) -> Response:
    principal = await principal_of(request, team_scoped=True)
    sort_by = query.read().sort_by
    teams = [principal.active_team_uid] if principal.active_team_uid else principal.team_uids
    services = services_of(request)
    async with services.database.read() as conn:
        found = await environments.list_environments(
            conn, services.settings.environments, teams, sort_by
        )
    return json_response({"environments": [_json(e) for e in found]})


def _json(environment: VisibleEnvironment) -> dict[str, Any]:
    spec, run = environment.spec, environment.newest_run
    item: dict[str, Any] = {
        "uid": spec.uid,
        "config": {
            "name": spec.name,
            "description": spec.description,
            "docker_image": spec.docker_image,
            "github_repos": [{"owner": g.owner, "repo": g.repo} for g in spec.github_repos],
            "setup_commands": list(spec.setup_commands),
        },
        "last_updated": spec.last_updated,
        "setup_failed": environments.setup_failed(environment),
        "access": environment.access,
    }
    if spec.team_uid is not None:
        item["scope"] = {"type": "Team", "uid": spec.team_uid}
    if run is not None:
        item["last_task_created"] = {
            "id": run.run_id,
            "title": run.title or "",
            "state": run.state,
            "created_at": run.created_at,
            "updated_at": run.updated_at,
            "started_at": run.started_at,
        }
    if environment.last_started_at is not None:
        item["last_task_run_timestamp"] = environment.last_started_at
    return item
