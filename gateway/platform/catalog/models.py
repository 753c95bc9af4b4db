"""The shapes of the catalog API: the models runs may select, the environments a caller may
run in (field names of the official client's CloudEnvironment), and the egress ranges."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from gateway.foundation.api.fields import Timestamp, unless_none
from gateway.kernel.catalog import ModelSpec
from gateway.platform.catalog.environments import SelectingRun, VisibleEnvironment, setup_failed
from gateway.platform.runs.record.states import RunState


class ModelCost(Struct):
    input_per_million_tokens: Annotated[float, Meta(description="US dollars")]
    output_per_million_tokens: Annotated[float, Meta(description="US dollars")]


class Model(Struct):
    id: Annotated[str, Meta(description="the value of a run's config.model_id")]
    display_name: str
    provider: str
    default: Annotated[bool, Meta(description="used when a run names no model")]
    cost: Annotated[ModelCost | None, Meta(description="list price; null when not published")]
    disabled: Annotated[bool, Meta(description="a run or agent naming it is a 400")]
    disabled_reason: str | None

    @classmethod
    def of(cls, spec: ModelSpec) -> Model:
        cost = spec.cost
        return cls(
            id=spec.id,
            display_name=spec.display_name,
            provider=spec.provider,
            default=spec.default,
            cost=None
            if cost is None
            else ModelCost(cost.input_per_million_tokens, cost.output_per_million_tokens),
            disabled=spec.disabled,
            disabled_reason=spec.disabled_reason,
        )


class ModelList(Struct):
    models: list[Model]


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

    @classmethod
    def of(cls, run: SelectingRun) -> LastTask:
        return cls(
            id=run.run_id,
            title=run.title or "",
            state=run.state,
            created_at=run.created_at,
            updated_at=run.updated_at,
            started_at=run.started_at,
        )


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

    @classmethod
    def of(cls, environment: VisibleEnvironment) -> Environment:
        spec, run = environment.spec, environment.newest_run
        assert spec.last_updated is not None  # catalog.parse_environments fills it in
        return cls(
            uid=spec.uid,
            config=EnvironmentConfig(
                name=spec.name,
                description=spec.description,
                docker_image=spec.docker_image,
                github_repos=[GitHubRepo(g.owner, g.repo) for g in spec.github_repos],
                setup_commands=list(spec.setup_commands),
            ),
            last_updated=spec.last_updated,
            setup_failed=setup_failed(environment),
            access=environment.access,
            scope=UNSET if spec.team_uid is None else Scope("Team", spec.team_uid),
            last_task_created=UNSET if run is None else LastTask.of(run),
            last_task_run_timestamp=unless_none(environment.last_started_at),
        )


class EnvironmentList(Struct):
    environments: list[Environment]


class EnvironmentQuery(Struct, kw_only=True):
    sort_by: Annotated[
        Literal["name", "last_updated"], Meta(description="last_updated: newest first")
    ] = "last_updated"


class EgressRanges(Struct):
    ranges: list[str]
    ipv4: list[str]
    ipv6: list[str]

    @classmethod
    def of(cls, ranges: Sequence[str]) -> EgressRanges:
        networks = [ipaddress.ip_network(r) for r in ranges]
        return cls(
            ranges=list(ranges),
            ipv4=[str(n) for n in networks if n.version == 4],
            ipv6=[str(n) for n in networks if n.version == 6],
        )
