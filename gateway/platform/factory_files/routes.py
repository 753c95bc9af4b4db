"""/factory-files/schemas: the versions of the factory definition file schemas, a version's
bundle, and one document of a version (spec 9.2)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta, Struct
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.auth import principal_of
from gateway.api.http import json_response
from gateway.api.routing import Routes
from gateway.platform.factory_files.schema import schema_bundle, schema_document, schema_versions

JsonSchema = Annotated[dict[str, Any], Meta(description="a JSON Schema 2020-12 document")]
SCHEMA_MEDIA_TYPE = "application/schema+json"


class SchemaVersion(Struct):
    version: Annotated[str, Meta(description="for example v1alpha1")]
    current: Annotated[bool, Meta(description="the version `gateway apply` validates against")]
    documents: Annotated[list[str], Meta(description="names of its documents")]
    bundle_path: Annotated[str, Meta(description="where its bundle is served")]


class SchemaVersions(Struct):
    versions: list[SchemaVersion]


routes = Routes("factory-files")
BASE = "/factory-files/schemas"


@routes.get(BASE, "List the schema versions", response=SchemaVersions, errors=(400, 401))
async def versions_endpoint(request: Request) -> Response:
    await principal_of(request)
    return json_response({"versions": schema_versions()})


@routes.get(
    BASE + "/{version}",
    "Every document of one version, bundled",
    response=JsonSchema,
    media_type=SCHEMA_MEDIA_TYPE,
    errors=(400, 401, 404),
    notes="A JSON Schema 2020-12 compound document: each document is embedded under $defs by "
    "its name and keeps its own $id.",
)
async def bundle_endpoint(request: Request) -> Response:
    await principal_of(request)
    return _schema(schema_bundle(request.path_params["version"]))


@routes.get(
    BASE + "/{version}/{document}",
    "One schema document of a version",
    response=JsonSchema,
    media_type=SCHEMA_MEDIA_TYPE,
    errors=(400, 401, 404),
    notes="factory.schema.json covers both file kinds; webhook.schema.json and "
    "automation.schema.json one kind each.",
)
async def document_endpoint(request: Request) -> Response:
    await principal_of(request)
    params = request.path_params
    return _schema(schema_document(params["version"], params["document"]))


def _schema(document: dict[str, Any]) -> Response:
    response = json_response(document)
    response.headers["content-type"] = SCHEMA_MEDIA_TYPE
    return response
