"""Bearer authentication for /api/v1: every handler starts by asking for the principal."""

from __future__ import annotations

from starlette.requests import Request

from gateway.domain.identities import Principal, authenticate
from gateway.errors import Forbidden, InvalidRequest, Unauthenticated
from gateway.services import Services

TEAM_HEADER = "x-service-team-uid"


def services_of(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


async def principal_of(request: Request, *, team_scoped: bool = False) -> Principal:
    """The caller; with `team_scoped`, the X-Service-Team-Uid header selects the active team."""
    _reject_nul(request)
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise Unauthenticated("Authorization: expected 'Bearer <API key>'")
    async with services_of(request).database.read() as conn:
        principal = await authenticate(conn, key.strip())
    if principal is None:
        raise Unauthenticated("Authorization: unknown or revoked API key")
    if team_scoped:
        return principal.with_active_team(request.headers.get(TEAM_HEADER))
    return principal


async def user_of(request: Request) -> Principal:
    principal = await principal_of(request, team_scoped=True)
    if not principal.is_user:
        raise Forbidden("this operation requires user credentials")
    return principal


def _reject_nul(request: Request) -> None:
    """PostgreSQL text cannot hold NUL; a NUL in a path or query value is a client mistake."""
    for name, value in [*request.path_params.items(), *request.query_params.multi_items()]:
        if "\x00" in name or "\x00" in value:
            raise InvalidRequest(f"{name}: must not contain NUL characters")
