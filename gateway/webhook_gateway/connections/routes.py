"""Provider connections: /provider-connections[/{uid}[/rotate-secret]] (team scoped)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Body, Routes
from gateway.webhook_gateway.connections import management
from gateway.webhook_gateway.connections.models import (
    ConnectionCreate,
    ConnectionList,
    ConnectionPatch,
    ProviderConnection,
    RotateConnectionSecret,
    RotatedConnectionSecret,
)

routes = Routes("provider connections")
BASE = "/provider-connections"
ONE = BASE + "/{connection_uid}"


async def _principal(request: Request) -> Principal:
    return await principal_of(request, team_scoped=True)


@routes.post(
    BASE,
    "Connect a provider",
    team=True,
    ok=201,
    response=ProviderConnection,
    errors=(400, 401, 403, 413),
    notes="For the active team (X-Service-Team-Uid, else the credential's only team); user "
    "credentials. The response carries `secret` once when the service generated it (GitHub, "
    "GitLab, Jira without `secret` or `secret_name`): paste it into the provider's webhook "
    "settings with the `ingress_url` (docs/providers.md).",
)
async def create(request: Request, body: Body[ConnectionCreate]) -> ProviderConnection:
    principal = await _principal(request)
    spec = await body.read()
    services = services_of(request)
    async with services.database.transaction() as conn:
        return await management.create_connection(conn, services, principal, spec)


@routes.get(BASE, "List provider connections", response=ConnectionList, team=True)
async def list_all(request: Request) -> ConnectionList:
    principal = await _principal(request)
    services = services_of(request)
    async with services.database.read() as conn:
        return ConnectionList(await management.list_connections(conn, services, principal))


@routes.get(
    ONE, "Get a provider connection", response=ProviderConnection, errors=(401, 403, 404), team=True
)
async def get_one(request: Request) -> ProviderConnection:
    principal = await _principal(request)
    services = services_of(request)
    async with services.database.read() as conn:
        uid = request.path_params["connection_uid"]
        return await management.get_connection(conn, services, principal, uid)


@routes.patch(
    ONE,
    "Change name, enabled or bot",
    team=True,
    response=ProviderConnection,
    errors=(400, 401, 403, 404, 413),
    notes="A disabled connection answers its provider 404, like a disabled webhook.",
)
async def patch(request: Request, body: Body[ConnectionPatch]) -> ProviderConnection:
    principal = await _principal(request)
    changes = await body.read()
    services = services_of(request)
    async with services.database.transaction() as conn:
        uid = request.path_params["connection_uid"]
        return await management.update_connection(conn, services, principal, uid, changes)


@routes.delete(
    ONE,
    "Delete a provider connection (its provider gets 404)",
    ok=204,
    errors=(401, 403, 404),
    team=True,
)
async def delete(request: Request) -> Response:
    principal = await _principal(request)
    services = services_of(request)
    async with services.database.transaction() as conn:
        await management.delete_connection(
            conn, services, principal, request.path_params["connection_uid"]
        )
    return Response(status_code=204)


@routes.post(
    ONE + "/rotate-secret",
    "Rotate the secret; the old one stops at once",
    team=True,
    response=RotatedConnectionSecret,
    body_required=False,
    errors=(400, 401, 403, 404, 409, 413),
    notes="GitHub, GitLab and Jira: without a body the service generates the new secret and "
    "answers it once. Slack and Linear issue their own: send it as `secret`.",
    problems=((409, "`managed_secret`: the connection reads a team secret; change that"),),
)
async def rotate(request: Request, body: Body[RotateConnectionSecret]) -> RotatedConnectionSecret:
    principal = await _principal(request)
    supplied = (await body.read()).secret
    services = services_of(request)
    async with services.database.transaction() as conn:
        uid = request.path_params["connection_uid"]
        return await management.rotate_secret(conn, services, principal, uid, supplied)
