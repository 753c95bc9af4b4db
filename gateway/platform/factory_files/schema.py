"""JSON Schema 2020-12 for factory definition files (webhooks/*.yaml, automations/*.yaml), by
schema version: each version has a document for both kinds and one per kind."""

from __future__ import annotations

from typing import Any, get_args

from gateway.automations.management import MAX_PROMPT, MAX_TRIGGERS
from gateway.errors import NotFound
from gateway.signatures import SCHEMES
from gateway.webhooks.models import AuthMode

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMAS_PATH = "/api/v1/factory-files/schemas"
VERSION = "v1alpha1"
FACTORY_DOCUMENT = "factory.schema.json"
SIGNATURE_SCHEMES = sorted(SCHEMES)
NAME: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"\S"}

_WEBHOOK: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": NAME,
        "authMode": {"enum": list(get_args(AuthMode)), "default": "token"},
        "signatureScheme": {"enum": SIGNATURE_SCHEMES},
        "secretName": {"type": "string", "minLength": 1, "maxLength": 200},
        "deliveryIdHeader": {"type": "string", "pattern": "^[A-Za-z0-9-]{1,100}$"},
        "enabled": {"type": "boolean", "default": True},
    },
    "if": {"properties": {"authMode": {"const": "signature"}}, "required": ["authMode"]},
    "then": {"required": ["signatureScheme"]},
    "else": {"not": {"required": ["signatureScheme"]}},
}

_TRIGGER: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["provider", "event", "filter"],
    "properties": {
        "provider": {"const": "webhook"},
        "event": {"const": "received"},
        "filter": {
            "type": "object",
            "additionalProperties": False,
            "required": ["webhook_ids"],
            "properties": {
                "webhook_ids": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                    "maxItems": 1,
                },
                "payload": {"type": "object"},
            },
        },
    },
}

_AUTOMATION: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["prompt", "triggers"],
    "properties": {
        "name": NAME,
        "prompt": {"type": "string", "minLength": 1, "maxLength": MAX_PROMPT, "pattern": r"\S"},
        "enabled": {"type": "boolean", "default": True},
        "triggers": {
            "type": "array",
            "items": {"$ref": "#/$defs/trigger"},
            "minItems": 1,
            "maxItems": MAX_TRIGGERS,
        },
    },
}

FACTORY_SCHEMA: dict[str, Any] = {
    "$schema": DIALECT,
    "$id": f"{SCHEMAS_PATH}/{VERSION}/{FACTORY_DOCUMENT}",
    "title": f"Factory definition files, {VERSION}",
    "description": (
        "A webhooks/<name>.yaml file is a webhook; an automations/<name>.yaml file an automation."
    ),
    "oneOf": [{"$ref": "#/$defs/webhook"}, {"$ref": "#/$defs/automation"}],
    "$defs": {"webhook": _WEBHOOK, "automation": _AUTOMATION, "trigger": _TRIGGER},
}


def definition_schema(kind: str) -> dict[str, Any]:
    """The schema of one file kind ("webhook" or "automation"), self-contained for validation."""
    return {
        **FACTORY_SCHEMA,
        "$id": f"{SCHEMAS_PATH}/{VERSION}/{kind}.schema.json",
        "title": f"Factory definition {kind} files ({kind}s/<name>.yaml), {VERSION}",
        "oneOf": [{"$ref": f"#/$defs/{kind}"}],
    }


# version -> document name -> document; a new version is added beside the old ones, which stay
# served as long as definition files written against them are accepted
SCHEMA_VERSIONS: dict[str, dict[str, dict[str, Any]]] = {
    VERSION: {
        FACTORY_DOCUMENT: FACTORY_SCHEMA,
        "webhook.schema.json": definition_schema("webhook"),
        "automation.schema.json": definition_schema("automation"),
    }
}
CURRENT_VERSION = VERSION


def schema_versions() -> list[dict[str, Any]]:
    return [
        {
            "version": version,
            "current": version == CURRENT_VERSION,
            "documents": sorted(documents),
            "bundle_path": f"{SCHEMAS_PATH}/{version}",
        }
        for version, documents in SCHEMA_VERSIONS.items()
    ]


def schema_bundle(version: str) -> dict[str, Any]:
    """Every document of `version` in one JSON Schema 2020-12 compound document: each is an
    embedded resource under $defs, keyed by its name and keeping its own $id."""
    documents = _version(version)
    return {
        "$schema": DIALECT,
        "$id": f"{SCHEMAS_PATH}/{version}",
        "title": f"Factory definition file schemas, {version}",
        "$defs": dict(sorted(documents.items())),
    }


def schema_document(version: str, name: str) -> dict[str, Any]:
    document = _version(version).get(name)
    if document is None:
        raise NotFound(f"document: {version} has no document {name!r}")
    return document


def _version(version: str) -> dict[str, dict[str, Any]]:
    documents = SCHEMA_VERSIONS.get(version)
    if documents is None:
        raise NotFound(f"version: no factory file schema version {version!r}")
    return documents
