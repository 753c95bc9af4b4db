"""POST /factory-files/validate: the public validation of a factory tree (factory-format.md §2;
validation.py). No key and no factory: anyone who can reach the server may call it, so each
client address (the forwarded one when the peer is a trusted proxy, as ingress reads it) has a
request budget per rolling minute, charged before the body is read, and the tree is parsed as
plan and apply parse theirs: in a child process, one at a time per serving process, with the
format's limits on files, bytes and YAML values."""

from __future__ import annotations

from typing import Literal

from starlette.requests import Request

from factory_format import MAX_FILES, MAX_TREE_BYTES
from gateway.foundation.api.auth import services_of
from gateway.foundation.api.routing import Body, Routes
from gateway.foundation.services import Services
from gateway.kernel.errors import PayloadTooLarge, Unprocessable, ValidationRateLimited
from gateway.kernel.problem import Problem
from gateway.platform.factory_files.parsing import parse_off_loop
from gateway.platform.factory_files.plan_routes import TREE_BODY_LIMIT
from gateway.platform.factory_files.validation import (
    ValidationRequest,
    ValidationResult,
    validation_result,
)

routes = Routes("factory-files")


class ValidationRateLimitedProblem(Problem, kw_only=True):
    """The 429 of the public validation."""

    code: Literal["validation_rate_limited"]


@routes.post(
    "/factory-files/validate",
    "Validate a factory tree (no key, no factory)",
    response=ValidationResult,
    body_limit=TREE_BODY_LIMIT,
    public=True,
    errors=(400, 413, 422, 429, 503),
    problem_types=((429, ValidationRateLimitedProblem),),
    problems=(
        (
            413,
            "`payload_too_large`: a body over 8 MiB, more than 256 files, or contents over "
            "2 MiB together; `detail` names the limit",
        ),
        (422, "`unprocessable`: a path listed twice (`detail` names files[i].path)"),
        (
            429,
            "`validation_rate_limited`: this client address's budget is spent; see "
            "Retry-After (GATEWAY_VALIDATE_RATE_LIMIT per minute)",
        ),
        (503, "`unavailable`: too many trees are being parsed here; again after Retry-After"),
    ),
    notes="The files alone are checked, as POST /factory-files/plan checks them before it "
    "reads the team's state: `valid` is true when there is no diagnostic. The references only "
    "a team's state resolves (models, secrets, runners, environments, MCP servers, worker "
    "hosts, Linear and Slack names...) are listed in `deferred_resolutions`, and the checks "
    "that need that state in `state_dependent_checks_not_run`; plan and apply run them.",
)
async def validate_endpoint(request: Request, body: Body[ValidationRequest]) -> ValidationResult:
    services = services_of(request)
    await _charge(services, request)
    posted = await body.read()
    files = _tree(posted)
    return validation_result(await parse_off_loop(services, files))


async def _charge(services: Services, request: Request) -> None:
    budget = services.validate_budget
    if budget is None:
        return
    peer = request.client.host if request.client is not None else None
    address = services.proxies.client(peer, request.headers.get("x-forwarded-for"))
    wait = await budget.spend(address)
    if wait is not None:
        raise ValidationRateLimited(
            f"client address {address}: validation request budget spent; retry in {wait} s",
            retry_after=wait,
        )


def _tree(posted: ValidationRequest) -> dict[str, str]:
    """{path: text} of the posted files, within the format's limits."""
    if len(posted.files) > MAX_FILES:
        raise PayloadTooLarge(f"files: {len(posted.files)} files; at most {MAX_FILES}")
    files: dict[str, str] = {}
    size = 0
    for i, file in enumerate(posted.files):
        if file.path in files:
            raise Unprocessable(f"files[{i}].path: {file.path!r} is listed twice")
        files[file.path] = file.content
        size += len(file.content.encode())
        if size > MAX_TREE_BYTES:
            raise PayloadTooLarge(
                f"files[{i}].content: the files' contents exceed {MAX_TREE_BYTES} bytes "
                "together; a tree may hold 2 MiB"
            )
    return files
