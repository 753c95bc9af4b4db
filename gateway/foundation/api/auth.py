"""Bearer authentication for /api/v1: every handler starts by asking for the principal."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.accounts.factories import Factory, get_accessible_factory
from gateway.foundation.accounts.identities import Principal, authenticate_hash
from gateway.foundation.api.pagination import Cursors
from gateway.foundation.services import Services
from gateway.kernel.errors import Unauthenticated
from gateway.kernel.security import hash_token

TEAM_HEADER = "x-service-team-uid"


def services_of(request: Request) -> Services:
    services: Services = request.state.services  # the lifespan's state (gateway.composition.app)
    return services


def cursors_of(request: Request) -> Cursors:
    return Cursors(services_of(request).secret_box)


async def principal_of(request: Request, *, team_scoped: bool = False) -> Principal:
    """The caller; with `team_scoped`, the X-Service-Team-Uid header selects the active team."""
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise Unauthenticated("Authorization: expected 'Bearer <API key>'")
    key = key.strip()
    services = services_of(request)
    cached = services.agent_keys
    key_hash = hash_token(key)
    hit = cached.get(key_hash)
    principal = hit if isinstance(hit, Principal) else None
    if principal is None:
        generation = cached.generation
        async with services.database.read() as conn:
            principal = await authenticate_hash(conn, key_hash)
        # agents' keys only: an agent's team never changes; a user's memberships do
        if principal is not None and principal.kind == "agent":
            cached.put(key_hash, principal, principal.uid, generation)
    if principal is None:
        raise Unauthenticated("Authorization: unknown or revoked API key")
    if team_scoped:
        return principal.with_active_team(request.headers.get(TEAM_HEADER))
    return principal


async def factory_of(request: Request) -> Factory:
    """The factory of the path (`uid`), one the caller may reach."""
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        return await get_accessible_factory(conn, principal, request.path_params["uid"])
