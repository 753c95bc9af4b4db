"""Benchmark suites, their tasks, runs and trials (spec 4.9); docs/api.md, "Benchmark suites"."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.factories import get_accessible_factory
from gateway.api.auth import cursors_of, principal_of, services_of
from gateway.api.decoding import given_fields
from gateway.api.fields import Cursor, Limit, Timestamp
from gateway.api.http import json_response
from gateway.api.pagination import PageInfo, page_info
from gateway.api.routing import Body, Query, Routes
from gateway.errors import InvalidRequest, NotFound
from gateway.platform.benchmark_suites import runs, suites
from gateway.platform.runs.records import load_run, run_item

routes = Routes("benchmarks")
SUITES = "/factory/{uid}/benchmark-suites"
SUITE = SUITES + "/{suite_uid}"
TASKS = SUITE + "/tasks"
TASK = TASKS + "/{task_uid}"
RUN = "/factory/{uid}/benchmark-runs/{benchmark_run_uid}"
MANAGE = (403, "`forbidden`: not a user of the factory's team (manage access)")

Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\S")]
Text = Annotated[str, Meta(min_length=1, max_length=100_000, pattern=r"\S")]
Refs = Annotated[list[Annotated[str, Meta(min_length=1, max_length=500)]], Meta(max_length=20)]
Tags = Annotated[list[Annotated[str, Meta(min_length=1, max_length=64)]], Meta(max_length=20)]


class Configuration(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=100, pattern=r"\S")]
    model_id: Annotated[str, Meta(description="an enabled model of /agent/models")] | None = None
    attempts: Annotated[int, Meta(ge=1, le=10)] = 1


Configurations = Annotated[list[Configuration], Meta(min_length=1, max_length=20)]


class SuiteCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Name
    description: Annotated[str, Meta(max_length=10_000)] | None = None
    configurations: Configurations


class SuiteUpdate(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Name | UnsetType = UNSET
    description: Annotated[str, Meta(max_length=10_000)] | UnsetType | None = UNSET
    configurations: Configurations | UnsetType = UNSET


class TaskCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    title: Name
    prompt: Text
    success_criteria: Text
    source_run_id: Annotated[str, Meta(min_length=1, max_length=64)] | None = None
    starting_repo_refs: Refs | None = None
    tags: Tags | None = None


class TaskUpdate(Struct, kw_only=True, forbid_unknown_fields=True):
    """Omitted fields are kept. Null or blank title, prompt or success_criteria: 400."""

    title: str | UnsetType | None = UNSET
    prompt: str | UnsetType | None = UNSET
    success_criteria: str | UnsetType | None = UNSET
    source_run_id: Annotated[str, Meta(max_length=64)] | UnsetType | None = UNSET
    starting_repo_refs: Refs | UnsetType | None = UNSET
    tags: Tags | UnsetType | None = UNSET


class Task(Struct, kw_only=True):
    uid: str
    suite_uid: str
    title: str
    prompt: str
    success_criteria: str
    source_run_id: str | None
    starting_repo_refs: list[str]
    tags: list[str]
    created_at: Timestamp
    updated_at: Timestamp


class ConfigurationOut(Struct, kw_only=True):
    name: str
    model_id: str | None = None
    attempts: int = 1


class Suite(Struct, kw_only=True):
    uid: str
    factory_uid: str
    name: str
    description: str | None
    configurations: list[ConfigurationOut]
    created_at: Timestamp
    updated_at: Timestamp
    tasks: Annotated[list[Task], Meta(description="GET of one suite")] | UnsetType = UNSET


class SuiteList(Struct):
    suites: list[Suite]


class Aggregate(Struct, kw_only=True):
    trials: int
    succeeded: int
    failed: int
    cancelled: int
    running: int


class BenchmarkRun(Struct, kw_only=True):
    uid: str
    suite_uid: str
    factory_uid: str
    status: Literal["running", "completed", "cancelled"]
    trials: int
    created_at: Timestamp
    cancelled_at: Timestamp | None
    launch_settings: (
        Annotated[list[ConfigurationOut], Meta(description="include=launch_settings")] | UnsetType
    ) = UNSET
    aggregate_results: (
        Annotated[Aggregate, Meta(description="include=aggregate_results")] | UnsetType
    ) = UNSET
    creator_name: Annotated[str | None, Meta(description="include=creator_name")] | UnsetType = (
        UNSET
    )


class RunPage(Struct):
    data: list[BenchmarkRun]
    page_info: PageInfo


class ConfigurationResult(Struct, kw_only=True):
    configuration: str
    trials: int
    succeeded: int
    failed: int
    cancelled: int
    running: int
    pass_rate: Annotated[float | None, Meta(description="succeeded / finished, not cancelled")]
    mean_duration_s: float | None
    cost_usd: float
    outcomes: list[str] | UnsetType = UNSET
    durations_s: list[float | None] | UnsetType = UNSET
    costs_usd: list[float] | UnsetType = UNSET


class Results(Struct):
    benchmark_run_uid: str
    status: Literal["running", "completed", "cancelled"]
    configurations: Annotated[
        list[ConfigurationResult], Meta(description="include=metrics adds per-trial arrays")
    ]


class Trial(Struct, kw_only=True):
    uid: str
    benchmark_run_uid: str
    task_uid: str
    task_title: str
    configuration: str
    attempt_number: int
    agent_run_id: str
    state: str
    created_at: Timestamp
    results: Annotated[dict[str, Any], Meta(description="include=results")] | UnsetType = UNSET
    details: (
        Annotated[dict[str, Any], Meta(description="include=details: the agent run")] | UnsetType
    ) = UNSET


class TrialPage(Struct, kw_only=True):
    data: list[Trial]
    page_info: PageInfo | UnsetType = UNSET
    matched_attempt_number: (
        Annotated[int | None, Meta(description="with agent_run_id")] | UnsetType
    ) = UNSET


class RunListQuery(Struct, kw_only=True):
    limit: Limit = 20
    cursor: Cursor | None = None
    include: list[Literal["launch_settings", "aggregate_results", "creator_name"]] = []


class ResultsQuery(Struct, kw_only=True):
    include: list[Literal["metrics"]] = []


class TrialQuery(Struct, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=100)] | None = None
    cursor: Cursor | None = None
    agent_run_id: str | None = None
    configuration: str | None = None
    task_uid: str | None = None


class TrialOneQuery(Struct, kw_only=True):
    include: list[Literal["results", "details"]] = []


# --- suites ---------------------------------------------------------------------------------


@routes.post(
    SUITES,
    "Create a benchmark suite",
    ok=201,
    response=Suite,
    errors=(400, 401, 403, 404, 413),
    problems=(MANAGE,),
)
async def create_suite_endpoint(request: Request, body: Body[SuiteCreate]) -> Response:
    principal = await principal_of(request)
    fields = given_fields(await body.read())
    services = services_of(request)
    async with services.database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        row = await suites.create_suite(conn, principal, factory, fields, services.settings.models)
    return json_response(suites.suite_json(row, []), 201)


@routes.get(SUITES, "List a factory's benchmark suites", response=SuiteList)
async def list_suites_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        rows = await suites.list_suites(conn, factory)
    return json_response({"suites": [suites.suite_json(row) for row in rows]})


@routes.get(SUITE, "A benchmark suite with its tasks and configurations", response=Suite)
async def get_suite_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        row = await suites.get_suite(conn, factory, request.path_params["suite_uid"])
        tasks = await suites.suite_tasks(conn, row.uid)
    return json_response(suites.suite_json(row, tasks))


@routes.patch(
    SUITE,
    "Edit a benchmark suite",
    response=Suite,
    errors=(400, 401, 403, 404, 413),
    problems=(MANAGE,),
)
async def update_suite_endpoint(request: Request, body: Body[SuiteUpdate]) -> Response:
    principal = await principal_of(request)
    changes = given_fields(await body.read())
    services = services_of(request)
    async with services.database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        row = await suites.update_suite(
            conn,
            principal,
            factory,
            request.path_params["suite_uid"],
            changes,
            services.settings.models,
        )
        tasks = await suites.suite_tasks(conn, row.uid)
    return json_response(suites.suite_json(row, tasks))


@routes.delete(
    SUITE,
    "Delete a benchmark suite (soft)",
    ok=204,
    errors=(401, 403, 404),
    problems=(MANAGE,),
    notes="It is no longer listed, read or launched; its runs and trials still read.",
)
async def delete_suite_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        await suites.delete_suite(conn, principal, factory, request.path_params["suite_uid"])
    return Response(status_code=204)


# --- tasks ------------------------------------------------------------------------------------


@routes.post(
    TASKS,
    "Add a task to a suite",
    ok=201,
    response=Task,
    errors=(400, 401, 403, 404, 409, 413),
    problems=(MANAGE, (409, "`task_title_taken`: a different task has this title")),
    also_ok=((200, "an identical task (every field the same): the existing one"),),
)
async def add_task_endpoint(request: Request, body: Body[TaskCreate]) -> Response:
    principal = await principal_of(request)
    fields = given_fields(await body.read())
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        row, created = await suites.add_task(
            conn, principal, factory, request.path_params["suite_uid"], fields
        )
    return json_response(suites.task_json(row), 201 if created else 200)


@routes.get(TASK, "A suite's task", response=Task)
async def get_task_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    params = request.path_params
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, params["uid"])
        row = await suites.get_task(conn, factory, params["suite_uid"], params["task_uid"])
    return json_response(suites.task_json(row))


@routes.patch(
    TASK,
    "Edit a suite's task",
    response=Task,
    errors=(400, 401, 403, 404, 409, 413),
    problems=(MANAGE, (409, "`task_title_taken`")),
    notes="Omitted fields are kept; null source_run_id, or empty starting_repo_refs or tags, "
    "clears the field; null or blank title, prompt or success_criteria is a 400.",
)
async def update_task_endpoint(request: Request, body: Body[TaskUpdate]) -> Response:
    principal = await principal_of(request)
    changes = given_fields(await body.read())
    params = request.path_params
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, params["uid"])
        row = await suites.update_task(
            conn, principal, factory, params["suite_uid"], params["task_uid"], changes
        )
    return json_response(suites.task_json(row))


@routes.delete(TASK, "Delete a suite's task", ok=204, errors=(401, 403, 404), problems=(MANAGE,))
async def delete_task_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    params = request.path_params
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, params["uid"])
        await suites.delete_task(conn, principal, factory, params["suite_uid"], params["task_uid"])
    return Response(status_code=204)


# --- runs -------------------------------------------------------------------------------------


@routes.post(
    SUITE + "/runs",
    "Launch a benchmark run",
    ok=201,
    response=BenchmarkRun,
    errors=(400, 401, 403, 404, 413),
    problems=(MANAGE,),
    notes="Not idempotent: each success makes a new run, one trial (a QUEUED agent run) per "
    "task x configuration x attempt. Clients should not retry it automatically.",
)
async def launch_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        row = await runs.launch(conn, principal, factory, request.path_params["suite_uid"])
        its_trials = (await runs.trials(conn, [row.uid]))[row.uid]
        body = await runs.run_json(conn, row, its_trials, ["launch_settings"])
    services_of(request).runs_queued.notify()
    return json_response(body, 201)


@routes.get(SUITE + "/runs", "A suite's benchmark runs, newest first", response=RunPage)
async def list_runs_endpoint(request: Request, query: Query[RunListQuery]) -> Response:
    principal = await principal_of(request)
    params = query.read()
    suite_uid = request.path_params["suite_uid"]
    scope = f"benchmark-runs:{suite_uid}"
    cursors = cursors_of(request)
    after = cursors.decode_keyset(scope, params.cursor)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        rows, more = await runs.list_runs(conn, factory, suite_uid, after=after, limit=params.limit)
        by_run = await runs.trials(conn, [row.uid for row in rows])
        data = [
            await runs.run_json(conn, row, by_run[row.uid], list(params.include)) for row in rows
        ]
    cursor = cursors.encode_keyset(scope, rows[-1].created_at, rows[-1].uid) if more else None
    return json_response({"data": data, "page_info": page_info(cursor)})


@routes.get(RUN, "A benchmark run", response=BenchmarkRun)
async def get_run_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        row = await runs.get_run(conn, factory, request.path_params["benchmark_run_uid"])
        its_trials = (await runs.trials(conn, [row.uid]))[row.uid]
        body = await runs.run_json(
            conn, row, its_trials, ["launch_settings", "aggregate_results", "creator_name"]
        )
    return json_response(body)


@routes.post(
    RUN + "/cancel",
    "Cancel an in-flight benchmark run",
    response=BenchmarkRun,
    errors=(401, 403, 404, 409),
    problems=(MANAGE, (409, "`benchmark_run_not_in_flight`: completed or cancelled already")),
    notes="Its unfinished trials' agent runs are cancelled.",
)
async def cancel_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        row = await runs.cancel(conn, principal, factory, request.path_params["benchmark_run_uid"])
        its_trials = (await runs.trials(conn, [row.uid]))[row.uid]
        body = await runs.run_json(conn, row, its_trials, ["aggregate_results"])
    return json_response(body)


@routes.get(
    RUN + "/results",
    "A benchmark run's results",
    response=Results,
    notes="Not paginated: one entry per configuration.",
)
async def results_endpoint(request: Request, query: Query[ResultsQuery]) -> Response:
    principal = await principal_of(request)
    include = query.read().include
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        row = await runs.get_run(conn, factory, request.path_params["benchmark_run_uid"])
        its_trials = (await runs.trials(conn, [row.uid]))[row.uid]
        spent = await runs.costs(conn, [trial.agent_run_id for trial in its_trials])
    body = {
        "benchmark_run_uid": row.uid,
        "status": runs.status_of(row, its_trials),
        "configurations": runs.results(its_trials, spent, metrics="metrics" in include),
    }
    return json_response(body)


@routes.get(
    RUN + "/trials",
    "A benchmark run's trials, or the trial of an agent run",
    response=TrialPage,
    notes="With agent_run_id: zero or one trial and its `matched_attempt_number`; no cursor, "
    "configuration or task_uid then, and `limit` omitted or 1.",
)
async def trials_endpoint(request: Request, query: Query[TrialQuery]) -> Response:
    principal = await principal_of(request)
    params = query.read()
    if params.agent_run_id is not None:
        for name in ("cursor", "configuration", "task_uid"):
            if getattr(params, name) is not None:
                raise InvalidRequest(f"{name}: not with agent_run_id")
        if params.limit not in (None, 1):
            raise InvalidRequest("limit: omitted or 1 with agent_run_id")
    run_uid = request.path_params["benchmark_run_uid"]
    scope = f"benchmark-trials:{run_uid}"
    cursors = cursors_of(request)
    position = cursors.decode(scope, params.cursor)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        row = await runs.get_run(conn, factory, run_uid)
        its_trials = (await runs.trials(conn, [row.uid]))[row.uid]
    if params.agent_run_id is not None:
        matched = [trial for trial in its_trials if trial.agent_run_id == params.agent_run_id]
        body: dict[str, Any] = {
            "data": [runs.trial_json(trial) for trial in matched],
            "matched_attempt_number": matched[0].attempt_number if matched else None,
        }
        return json_response(body)
    chosen = [
        trial
        for trial in its_trials
        if (params.configuration is None or trial.configuration == params.configuration)
        and (params.task_uid is None or trial.task_uid == params.task_uid)
    ]
    start = int(position[0]) if position else 0
    limit = params.limit or 50
    page = chosen[start : start + limit]
    more = start + limit < len(chosen)
    cursor = cursors.encode(scope, [start + limit]) if more else None
    return json_response(
        {"data": [runs.trial_json(t) for t in page], "page_info": page_info(cursor)}
    )


@routes.get(RUN + "/trials/{trial_uid}", "One trial", response=Trial)
async def trial_endpoint(request: Request, query: Query[TrialOneQuery]) -> Response:
    principal = await principal_of(request)
    include = query.read().include
    params = request.path_params
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, params["uid"])
        row = await runs.get_run(conn, factory, params["benchmark_run_uid"])
        its_trials = (await runs.trials(conn, [row.uid]))[row.uid]
        found = [trial for trial in its_trials if trial.uid == params["trial_uid"]]
        if not found:
            raise NotFound(f"trial_uid: no trial {params['trial_uid']} in this run")
        trial = found[0]
        body = runs.trial_json(trial)
        agent_run = await load_run(conn, trial.agent_run_id) if include else None
        if "results" in include and agent_run is not None:
            spent = await runs.costs(conn, [trial.agent_run_id])
            body["results"] = runs.trial_results(trial, agent_run, spent)
        if "details" in include and agent_run is not None:
            body["details"] = await run_item(conn, agent_run)
    return json_response(body)
