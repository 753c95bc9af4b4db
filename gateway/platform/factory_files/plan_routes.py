"""POST /factory-files/plan and /factory-files/apply (a CI job posts the tree), and the stored
definition of a factory (GET /factory/{uid}/definition); docs/factory-files.md."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request

from factory_format import MAX_TREE_BYTES
from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Body, Routes
from gateway.foundation.services import Services
from gateway.platform.factory_files.apply import Caller, apply_tree, plan_tree
from gateway.platform.factory_files.definition import stored_definition
from gateway.platform.factory_files.models import (
    InvalidTreeProblem,
    Plan,
    PostedTree,
    StoredDefinition,
)
from gateway.platform.factory_files.parsing import parse_off_loop
from gateway.platform.factory_files.posted import Parsed

routes = Routes("factory-files")
# a tree may hold 2 MiB of text (factory_format.MAX_TREE_BYTES); JSON escapes make it larger
TREE_BODY_LIMIT = 4 * MAX_TREE_BYTES
ERRORS = (400, 401, 403, 404, 409, 413, 422, 503)
PROBLEMS = (
    (403, "`forbidden`: agent credentials, or a factory or team that is not the caller's"),
    (409, "`conflict`: several factories of the team have the tree's name; give factory_uid"),
    (
        422,
        "`invalid_factory_tree`: the tree's problems, in `diagnostics` (the first 100; "
        "`diagnostics_omitted` counts the others); nothing changed",
    ),
    (503, "`unavailable`: too many trees are being parsed here; again after Retry-After"),
)
NOTES = (
    "Needs user credentials of the factory's team (X-Service-Team-Uid picks the team a new "
    "factory is made in). The tree is parsed and checked whole: problems of the files and "
    "references this server cannot resolve (models, team secrets, runners, environments, "
    "webhook UIDs, the alias) are all answered as diagnostics. The body may hold 8 MiB (a "
    "tree's files 2 MiB)."
)
# what /factory-files/plan and /factory-files/apply document alike
TREE_OPERATION: dict[str, Any] = {
    "response": Plan,
    "errors": ERRORS,
    "problems": PROBLEMS,
    "problem_types": ((422, InvalidTreeProblem),),
    "body_limit": TREE_BODY_LIMIT,
    "team": True,
}
Step = Callable[[Services, Parsed, Caller, str | None], Awaitable[Plan]]


async def _posted_tree(request: Request, body: Body[PostedTree], step: Step) -> Plan:
    """`step` (plan_tree or apply_tree) on the posted tree, for the caller's team."""
    principal = await principal_of(request, team_scoped=True)
    posted = await body.read()
    caller = Caller(principal=principal)
    services = services_of(request)
    parsed = await parse_off_loop(services, posted.files)
    return await step(services, parsed, caller, posted.factory_uid)


@routes.post(
    "/factory-files/plan",
    "What applying a factory definition tree would change",
    **TREE_OPERATION,
    notes=NOTES + " Nothing is written.",
)
async def plan_endpoint(request: Request, body: Body[PostedTree]) -> Plan:
    return await _posted_tree(request, body, plan_tree)


@routes.post(
    "/factory-files/apply",
    "Make a factory match its definition tree",
    **TREE_OPERATION,
    notes=NOTES + " One transaction: the factory, created when none of the team has the tree's "
    "name, and every resource files declare, created, updated or deleted; resources created "
    "through the API and never declared by a file are left alone. Answers the plan it carried "
    "out.",
)
async def apply_endpoint(request: Request, body: Body[PostedTree]) -> Plan:
    return await _posted_tree(request, body, apply_tree)


@routes.get(
    "/factory/{uid}/definition",
    "The factory's definition as stored",
    response=StoredDefinition,
    notes="Every resource a definition file declared, with its uid and its stored state in the "
    "comparable form plans are made of (inheritance resolved under `effective`).",
)
async def definition_endpoint(request: Request) -> StoredDefinition:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        return await stored_definition(conn, factory.uid)
