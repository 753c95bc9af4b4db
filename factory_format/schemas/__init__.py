"""The JSON Schema (2020-12) documents of the factory file format, by version: served by the
API as they are, and used by the parser to check each file's shape. Documents refer to each
other by relative `$ref` (`common.schema.json#/$defs/name`), resolved against their `$id`."""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib.resources import files
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from ..layout import FileKind

__all__ = [
    "CURRENT_VERSION",
    "DOCUMENTS",
    "SCHEMAS_PATH",
    "VERSIONS",
    "document_of",
    "schema_bundle",
    "schema_document",
    "schema_versions",
    "validator_for",
]

SCHEMAS_PATH = "/api/v1/factory-files/schemas"
CURRENT_VERSION = "v1alpha1"
VERSIONS = (CURRENT_VERSION,)
DIALECT = "https://json-schema.org/draft/2020-12/schema"
DOCUMENTS = (
    "factory.schema.json",
    "agent.schema.json",
    "automation.schema.json",
    "scorer.schema.json",
    "runner.schema.json",
    "webhook.schema.json",
    "benchmark_suite.schema.json",
    "benchmark_suite_task.schema.json",
    "common.schema.json",
)
_KIND_DOCUMENTS = {
    FileKind.FACTORY: "factory.schema.json",
    FileKind.AGENT: "agent.schema.json",
    FileKind.AUTOMATION: "automation.schema.json",
    FileKind.SCORER: "scorer.schema.json",
    FileKind.RUNNER: "runner.schema.json",
    FileKind.WEBHOOK: "webhook.schema.json",
    FileKind.BENCHMARK_SUITE: "benchmark_suite.schema.json",
    FileKind.BENCHMARK_TASK: "benchmark_suite_task.schema.json",
}


def document_of(kind: FileKind) -> str | None:
    """The schema document of a file kind; None for skills, which have no schema."""
    return _KIND_DOCUMENTS.get(kind)


@cache
def _documents(version: str) -> dict[str, dict[str, Any]]:
    folder = files(__package__).joinpath(version)
    return {name: json.loads(folder.joinpath(name).read_text("utf-8")) for name in DOCUMENTS}


def schema_versions() -> list[dict[str, Any]]:
    return [
        {
            "version": version,
            "current": version == CURRENT_VERSION,
            "documents": sorted(DOCUMENTS),
            "bundle_path": f"{SCHEMAS_PATH}/{version}",
        }
        for version in VERSIONS
    ]


def schema_document(version: str, name: str) -> dict[str, Any] | None:
    """A copy of one document (`factory.schema.json`, or just `factory`); None if unknown."""
    if version not in VERSIONS:
        return None
    document = _documents(version).get(name if name.endswith(".json") else f"{name}.schema.json")
    return copy.deepcopy(document) if document is not None else None


def schema_bundle(version: str) -> dict[str, Any] | None:
    """Every document of `version` in one JSON Schema compound document: each is embedded
    under $defs by its name and keeps its own $id, so references between them resolve inside
    the bundle."""
    if version not in VERSIONS:
        return None
    return {
        "$schema": DIALECT,
        "$id": f"{SCHEMAS_PATH}/{version}",
        "title": f"Factory file schemas, {version}",
        "$defs": copy.deepcopy(dict(sorted(_documents(version).items()))),
    }


@cache
def _registry(version: str) -> Registry[Any]:
    resources: list[tuple[str, Resource[Any]]] = [
        (doc["$id"], DRAFT202012.create_resource(doc)) for doc in _documents(version).values()
    ]
    return Registry().with_resources(resources)


@cache
def validator_for(kind: FileKind, version: str = CURRENT_VERSION) -> Draft202012Validator | None:
    name = document_of(kind)
    if name is None:
        return None
    return Draft202012Validator(_documents(version)[name], registry=_registry(version))
