"""GET /agent/models: the models runs and agents may select (from configuration)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_response
from gateway.api.routing import Routes


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


class ModelList(Struct):
    models: list[Model]


routes = Routes("models")


@routes.get(
    "/agent/models",
    "List the models runs may select",
    response=ModelList,
    errors=(400, 401),
    notes="Configured with GATEWAY_MODELS[_FILE]; in the configured order.",
)
async def list_endpoint(request: Request) -> Response:
    await principal_of(request)
    models = services_of(request).settings.models
    return json_response(
        {
            "models": [
                {
                    "id": m.id,
                    "display_name": m.display_name,
                    "provider": m.provider,
                    "default": m.default,
                    "cost": None
                    if m.cost is None
                    else {
                        "input_per_million_tokens": m.cost.input_per_million_tokens,
                        "output_per_million_tokens": m.cost.output_per_million_tokens,
                    },
                    "disabled": m.disabled,
                    "disabled_reason": m.disabled_reason,
                }
                for m in models
            ]
        }
    )
