"""GET /agent/models: the models runs and agents may select (from configuration)."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Routes
from gateway.platform.catalog.models import Model, ModelList

routes = Routes("models")


@routes.get(
    "/agent/models",
    "List the models runs may select",
    response=ModelList,
    errors=(400, 401),
    notes="Configured with GATEWAY_MODELS[_FILE]; in the configured order.",
)
async def list_endpoint(request: Request) -> ModelList:
    await principal_of(request)
    return ModelList([Model.of(spec) for spec in services_of(request).settings.models])
