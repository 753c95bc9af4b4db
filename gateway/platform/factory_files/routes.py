"""/factory-files/schemas: the versions of the factory file schemas, a version's bundle, and
one document of a version (spec 9.2). The documents are factory_format's (docs/factory-files.md).
Served without a key, as the vendor's registry is: a CI job checks a tree against them (and
POST /factory-files/validate) before anyone holds a key of this server."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct
from starlette.requests import Request
from starlette.responses import Response

from factory_format import CURRENT_VERSION, schema_bundle, schema_document, schema_versions
from gateway.foundation.api.http import json_response
from gateway.foundation.api.routing import Routes
from gateway.kernel.errors import NotFound

JsonSchema = Annotated[dict[str, Any], Meta(description="a JSON Schema 2020-12 document")]
SCHEMA_MEDIA_TYPE = "application/schema+json"


class SchemaVersion(Struct):
    version: Annotated[str, Meta(description="for example v1alpha1")]
    current: Annotated[bool, Meta(description="the version trees are validated against")]
    documents: Annotated[list[str], Meta(description="names of its documents")]
    bundle_path: Annotated[str, Meta(description="where its bundle is served")]


class SchemaVersions(Struct):
    current_version: Annotated[
        str, Meta(description="the version a tree without schemaVersion is read as")
    ]
    versions: list[SchemaVersion]


routes = Routes("factory-files")
BASE = "/factory-files/schemas"


@routes.get(BASE, "List the schema versions", response=SchemaVersions, errors=(), public=True)
async def versions_endpoint(request: Request) -> SchemaVersions:
    return SchemaVersions(CURRENT_VERSION, msgspec.convert(schema_versions(), list[SchemaVersion]))


@routes.get(
    BASE + "/{version}",
    "Every document of one version, bundled",
    response=JsonSchema,
    media_type=SCHEMA_MEDIA_TYPE,
    errors=(404,),
    public=True,
    notes="A JSON Schema 2020-12 compound document: each document is embedded under $defs by "
    "its name and keeps its own $id.",
)
async def bundle_endpoint(request: Request) -> Response:
    version = request.path_params["version"]
    bundle = schema_bundle(version)
    if bundle is None:
        raise NotFound(f"version: no factory file schema version {version!r}")
    return _schema(bundle)


@routes.get(
    BASE + "/{version}/{document}",
    "One schema document of a version",
    response=JsonSchema,
    media_type=SCHEMA_MEDIA_TYPE,
    errors=(404,),
    public=True,
    notes="One document per file kind (factory, agent, automation and scorer frontmatter, "
    "runner, webhook, benchmark_suite, benchmark_suite_task) and common.schema.json, whose "
    "definitions the others refer to by relative $ref.",
)
async def document_endpoint(request: Request) -> Response:
    version, name = request.path_params["version"], request.path_params["document"]
    document = schema_document(version, name)
    if document is None:
        if schema_bundle(version) is None:
            raise NotFound(f"version: no factory file schema version {version!r}")
        raise NotFound(f"document: {version} has no document {name!r}")
    return _schema(document)


def _schema(document: dict[str, Any]) -> Response:
    response = json_response(document)
    response.headers["content-type"] = SCHEMA_MEDIA_TYPE
    return response
