"""JSON Schema 2020-12 of the file shapes `gateway apply` reads today (webhooks/*.yaml,
automations/*.yaml). The schemas served under /factory-files/schemas are the public v1alpha1
format's (factory_format); these go when apply moves to that format."""

from __future__ import annotations

from typing import Any, get_args

from gateway.automations.management import MAX_PROMPT, MAX_TRIGGERS
from gateway.signatures import SCHEME_ALIASES, SCHEMES
from gateway.webhooks.models import AuthMode

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMAS_PATH = "/api/v1/factory-files/schemas"
VERSION = "v1alpha1"
FACTORY_DOCUMENT = "factory.schema.json"
SIGNATURE_SCHEMES = sorted(SCHEMES)  # what is stored; files may also use an alias
NAME: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"\S"}

_WEBHOOK: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": NAME,
        "authMode": {"enum": list(get_args(AuthMode)), "default": "token"},
        "signatureScheme": {"enum": sorted([*SIGNATURE_SCHEMES, *SCHEME_ALIASES])},
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
