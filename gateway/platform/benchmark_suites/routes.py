"""Benchmark suites, their tasks, runs and trials (spec 4.9); docs/api.md, "Benchmark suites"."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.api.auth import cursors_of, principal_of, services_of
from gateway.foundation.api.http import json_response
from gateway.foundation.api.pagination import page_info
from gateway.foundation.api.routing import Body, Query, Routes
from gateway.kernel.errors import InvalidRequest
from gateway.platform.benchmark_suites import outcomes, runs, suites
from gateway.platform.benchmark_suites.models import (
    BenchmarkResultsQuery,
    BenchmarkRun,
    Results,
    RunListQuery,
    RunPage,
    Suite,
    SuiteCreate,
    SuiteList,
    SuiteTask,
    SuiteTaskCreate,
    SuiteUpdate,
    TaskUpdate,
    Trial,
    TrialOneQuery,
    TrialPage,
    TrialQuery,
)

routes = Routes("benchmarks")
SUITES = "/factory/{uid}/benchmark-suites"
SUITE = SUITES + "/{suite_uid}"
TASKS = SUITE + "/tasks"
TASK = TASKS + "/{task_uid}"
RUN = "/factory/{uid}/benchmark-runs/{benchmark_run_uid}"
MANAGE = (403, "`forbidden`: not a user of the factory's team (manage access)")


# --- suites ---------------------------------------------------------------------------------


@routes.post(
    SUITES,
    "Create a benchmark suite",
    ok=201,
    response=Suite,
    errors=(400, 401, 403, 404, 413),
    problems=(MANAGE,),
)
async def create_suite_endpoint(request: Request, body: Body[SuiteCreate]) -> Suite:
    principal = await principal_of(request)
    spec = await body.read()
    services = services_of(request)
    async with services.database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        return await suites.create_suite(conn, principal, factory, spec, services.settings.models)


@routes.get(SUITES, "List a factory's benchmark suites", response=SuiteList)
async def list_suites_endpoint(request: Request) -> SuiteList:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        return SuiteList(await suites.list_suites(conn, factory))


@routes.get(SUITE, "A benchmark suite with its tasks and configurations", response=Suite)
async def get_suite_endpoint(request: Request) -> Suite:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        return await suites.read_suite(conn, factory, request.path_params["suite_uid"])


@routes.patch(
    SUITE,
    "Edit a benchmark suite",
    response=Suite,
    errors=(400, 401, 403, 404, 413),
    problems=(MANAGE,),
)
async def update_suite_endpoint(request: Request, body: Body[SuiteUpdate]) -> Suite:
    principal = await principal_of(request)
    changes = await body.read()
    services = services_of(request)
    async with services.database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        return await suites.update_suite(
            conn,
            principal,
            factory,
            request.path_params["suite_uid"],
            changes,
            services.settings.models,
        )


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
    response=SuiteTask,
    errors=(400, 401, 403, 404, 409, 413),
    problems=(MANAGE, (409, "`task_title_taken`: a different task has this title")),
    also_ok=((200, "an identical task (every field the same): the existing one"),),
)
async def add_task_endpoint(request: Request, body: Body[SuiteTaskCreate]) -> SuiteTask | Response:
    principal = await principal_of(request)
    spec = await body.read()
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        task, created = await suites.add_task(
            conn, principal, factory, request.path_params["suite_uid"], spec
        )
    return task if created else json_response(task)  # the identical one: 200, not `ok`


@routes.get(TASK, "A suite's task", response=SuiteTask)
async def get_task_endpoint(request: Request) -> SuiteTask:
    principal = await principal_of(request)
    params = request.path_params
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, params["uid"])
        return await suites.get_task(conn, factory, params["suite_uid"], params["task_uid"])


@routes.patch(
    TASK,
    "Edit a suite's task",
    response=SuiteTask,
    errors=(400, 401, 403, 404, 409, 413),
    problems=(MANAGE, (409, "`task_title_taken`")),
    notes="Omitted fields are kept; null source_run_id, or empty starting_repo_refs or tags, "
    "clears the field; null or blank title, prompt or success_criteria is a 400.",
)
async def update_task_endpoint(request: Request, body: Body[TaskUpdate]) -> SuiteTask:
    principal = await principal_of(request)
    changes = await body.read()
    params = request.path_params
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, params["uid"])
        return await suites.update_task(
            conn, principal, factory, params["suite_uid"], params["task_uid"], changes
        )


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
async def launch_endpoint(request: Request) -> BenchmarkRun:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        launched = await runs.launch(conn, principal, factory, request.path_params["suite_uid"])
    services_of(request).runs_queued.notify()
    return launched


@routes.get(SUITE + "/runs", "A suite's benchmark runs, newest first", response=RunPage)
async def list_runs_endpoint(request: Request, query: Query[RunListQuery]) -> RunPage:
    principal = await principal_of(request)
    params = query.read()
    suite_uid = request.path_params["suite_uid"]
    scope = f"benchmark-runs:{suite_uid}"
    cursors = cursors_of(request)
    after = cursors.decode_keyset(scope, params.cursor)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        data, more = await runs.list_runs(
            conn, factory, suite_uid, after=after, limit=params.limit, include=params.include
        )
    cursor = cursors.encode_keyset(scope, data[-1].created_at, data[-1].uid) if more else None
    return RunPage(data, page_info(cursor))


@routes.get(RUN, "A benchmark run", response=BenchmarkRun)
async def get_run_endpoint(request: Request) -> BenchmarkRun:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        return await runs.read_run(conn, factory, request.path_params["benchmark_run_uid"])


@routes.post(
    RUN + "/cancel",
    "Cancel an in-flight benchmark run",
    response=BenchmarkRun,
    errors=(401, 403, 404, 409),
    problems=(MANAGE, (409, "`benchmark_run_not_in_flight`: completed or cancelled already")),
    notes="Its unfinished trials' agent runs are cancelled.",
)
async def cancel_endpoint(request: Request) -> BenchmarkRun:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        uid = request.path_params["benchmark_run_uid"]
        return await runs.cancel(conn, principal, factory, uid)


@routes.get(
    RUN + "/results",
    "A benchmark run's results",
    response=Results,
    notes="Not paginated: one entry per configuration.",
)
async def results_endpoint(request: Request, query: Query[BenchmarkResultsQuery]) -> Results:
    principal = await principal_of(request)
    include = query.read().include
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        uid = request.path_params["benchmark_run_uid"]
        return await outcomes.run_results(conn, factory, uid, metrics="metrics" in include)


@routes.get(
    RUN + "/trials",
    "A benchmark run's trials, or the trial of an agent run",
    response=TrialPage,
    notes="With agent_run_id: zero or one trial and its `matched_attempt_number`; no cursor, "
    "configuration or task_uid then, and `limit` omitted or 1.",
)
async def trials_endpoint(request: Request, query: Query[TrialQuery]) -> TrialPage:
    principal = await principal_of(request)
    params = query.read()
    run_uid = request.path_params["benchmark_run_uid"]
    if params.agent_run_id is not None:
        for name in ("cursor", "configuration", "task_uid"):
            if getattr(params, name) is not None:
                raise InvalidRequest(f"{name}: not with agent_run_id")
        if params.limit not in (None, 1):
            raise InvalidRequest("limit: omitted or 1 with agent_run_id")
        async with services_of(request).database.read() as conn:
            factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
            return await outcomes.agent_run_trial(conn, factory, run_uid, params.agent_run_id)
    scope = f"benchmark-trials:{run_uid}"
    cursors = cursors_of(request)
    position = cursors.decode(scope, params.cursor)
    start = int(position[0]) if position else 0
    limit = params.limit or 50
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        data, more = await outcomes.trial_page(
            conn,
            factory,
            run_uid,
            configuration=params.configuration,
            task_uid=params.task_uid,
            start=start,
            limit=limit,
        )
    cursor = cursors.encode(scope, [start + limit]) if more else None
    return TrialPage(data=data, page_info=page_info(cursor))


@routes.get(RUN + "/trials/{trial_uid}", "One trial", response=Trial)
async def trial_endpoint(request: Request, query: Query[TrialOneQuery]) -> Trial:
    principal = await principal_of(request)
    include = query.read().include
    params = request.path_params
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, params["uid"])
        return await outcomes.one_trial(
            conn, factory, params["benchmark_run_uid"], params["trial_uid"], include
        )
