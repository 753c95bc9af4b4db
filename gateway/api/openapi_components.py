"""Reusable schemas of the OpenAPI document (components/schemas), as plain JSON Schema dicts."""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

STRING: Schema = {"type": "string"}
NULLABLE_STRING: Schema = {"type": ["string", "null"]}
BOOLEAN: Schema = {"type": "boolean"}
TIMESTAMP: Schema = {"type": "string", "format": "date-time"}
RUN_STATES = [
    "QUEUED",
    "PENDING",
    "CLAIMED",
    "INPROGRESS",
    "SUCCEEDED",
    "FAILED",
    "BLOCKED",
    "ERROR",
    "CANCELLED",
]
TASK_STAGES = ["TRIAGE", "BACKLOG", "TODO", "IN_PROGRESS", "IN_REVIEW", "DONE", "CANCELLED"]
AUTH_MODES = ["token", "url_token", "signature"]
SIGNATURE_SCHEMES = ["standard-webhooks", "stripe", "github", "slack", "shopify", "linear"]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(properties: dict[str, Schema], required: tuple[str, ...] = (), **extra: Any) -> Schema:
    """An object schema; request bodies pass additionalProperties=False (unknown fields: 400)."""
    schema: Schema = {"type": "object", "properties": properties, **extra}
    if required:
        schema["required"] = list(required)
    return schema


def list_of(key: str, item: str, *, paged: bool = False) -> Schema:
    properties: dict[str, Schema] = {key: {"type": "array", "items": ref(item)}}
    if paged:
        properties["page_info"] = ref("PageInfo")
    return obj(properties, tuple(properties))


def _webhook_schemas() -> dict[str, Schema]:
    name: Schema = {"type": "string", "minLength": 1, "maxLength": 200}
    header: Schema = {"type": ["string", "null"], "pattern": "^[A-Za-z0-9-]{1,100}$"}
    return {
        "WebhookCreate": obj(
            {
                "name": name,
                "auth_mode": {"enum": AUTH_MODES, "default": "token"},
                "signature_scheme": {"enum": SIGNATURE_SCHEMES},
                "secret": {"type": "string", "description": "signature mode: provider secret"},
                "secret_name": {"type": "string", "description": "an existing team secret"},
                "delivery_id_header": header,
                "enabled": {"type": "boolean", "default": True},
            },
            ("name",),
            additionalProperties=False,
        ),
        "WebhookPatch": obj(
            {"name": name, "enabled": BOOLEAN, "delivery_id_header": header},
            additionalProperties=False,
        ),
        "RotateSecret": obj(
            {"secret": {"type": "string", "description": "signature mode: new provider secret"}},
            additionalProperties=False,
        ),
        "RotatedSecret": obj(
            {
                "ingress_url": STRING,
                "secret": {"type": "string", "description": "only when generated; shown once"},
            },
            ("ingress_url",),
        ),
        "Webhook": obj(
            {
                "uid": STRING,
                "factory_uid": STRING,
                "name": STRING,
                "auth_mode": {"enum": AUTH_MODES},
                "signature_scheme": NULLABLE_STRING,
                "secret_name": NULLABLE_STRING,
                "delivery_id_header": NULLABLE_STRING,
                "enabled": BOOLEAN,
                "has_secret": BOOLEAN,
                "ingress_url": STRING,
                "secret": {"type": "string", "description": "only when generated; shown once"},
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
            },
            ("uid", "factory_uid", "name", "auth_mode", "enabled", "ingress_url"),
        ),
        "WebhookList": list_of("webhooks", "Webhook"),
        "Delivery": obj(
            {
                "delivery_id": STRING,
                "received_at": TIMESTAMP,
                "size": {"type": "integer"},
                "label": STRING,
                "runs": {
                    "type": "array",
                    "items": obj({"automation_uid": STRING, "run_id": STRING}),
                },
                "payload": {"description": "accepted deliveries, on GET one only"},
            },
            ("delivery_id", "received_at", "size", "label"),
        ),
        "DeliveryList": list_of("deliveries", "Delivery", paged=True),
        "IngressAccepted": obj({"delivery_id": STRING}, ("delivery_id",)),
    }


def _automation_schemas() -> dict[str, Schema]:
    trigger = obj(
        {
            "provider": {"const": "webhook"},
            "event": {"const": "received"},
            "filter": obj(
                {
                    "webhook_ids": {
                        "type": "array",
                        "items": STRING,
                        "minItems": 1,
                        "maxItems": 1,
                    },
                    "payload": {"type": "object", "description": "payload filter (spec 2.11)"},
                },
                ("webhook_ids",),
                additionalProperties=False,
            ),
        },
        ("provider", "event", "filter"),
        additionalProperties=False,
    )
    triggers: Schema = {"type": "array", "items": ref("Trigger"), "minItems": 1, "maxItems": 20}
    fields = {
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "prompt": {"type": "string", "minLength": 1},
        "enabled": {"type": "boolean", "default": True},
        "triggers": triggers,
    }
    return {
        "Trigger": trigger,
        "AutomationCreate": obj(fields, ("name", "prompt", "triggers"), additionalProperties=False),
        "AutomationPatch": obj(fields, additionalProperties=False),
        "Automation": obj(
            {
                "uid": STRING,
                "factory_uid": STRING,
                **fields,
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
                "webhooks_deleted": {"type": "array", "items": STRING},
            },
            ("uid", "factory_uid", "name", "prompt", "enabled", "triggers"),
        ),
        "AutomationList": list_of("automations", "Automation"),
    }


def _run_schemas() -> dict[str, Schema]:
    return {
        "RunCreate": obj(
            {"prompt": STRING, "title": STRING, "config": ref("AgentConfig")},
            ("prompt",),
        ),
        "AgentConfig": obj(
            {
                key: STRING
                for key in (
                    "name",
                    "model_id",
                    "base_prompt",
                    "environment_id",
                    "worker_host",
                    "skill_spec",
                )
            }
            | {"mcp_servers": {"type": "object"}}
        ),
        "RunCreated": obj(
            {"run_id": STRING, "task_id": STRING, "state": {"enum": RUN_STATES}},
            ("run_id", "task_id", "state"),
        ),
        "Run": obj(
            {
                "run_id": STRING,
                "task_id": STRING,
                "title": NULLABLE_STRING,
                "prompt": STRING,
                "state": {"enum": RUN_STATES},
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
                "source": STRING,
                "metadata": {"type": "object", "additionalProperties": STRING},
            },
            ("run_id", "task_id", "prompt", "state", "created_at", "updated_at"),
        ),
        "RunList": list_of("runs", "Run", paged=True),
        "FollowUp": obj(
            {"message": STRING, "attachments": {"type": "array", "items": STRING}, "mode": STRING},
            ("message",),
        ),
        "FactoryRunCreate": obj(
            {"prompt": STRING, "title": STRING, "ticket_ref": STRING, "ticket_url": STRING},
            ("prompt",),
        ),
        "AttachmentsPrepare": obj({"files": {"type": "array", "items": {"type": "object"}}}),
    }


def _task_schemas() -> dict[str, Schema]:
    stage: Schema = {"enum": TASK_STAGES}
    return {
        "TaskCreate": obj(
            {"title": STRING, "conversation_id": STRING, "stage": stage},
            ("title", "conversation_id"),
        ),
        "TaskPatch": obj({"title": STRING, "description": STRING, "stage": stage}),
        "Task": obj(
            {
                "uid": STRING,
                "factory_uid": STRING,
                "title": STRING,
                "description": NULLABLE_STRING,
                "stage": stage,
                "conversation_id": STRING,
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
            },
            ("uid", "title", "stage", "conversation_id"),
        ),
        "TaskList": list_of("tasks", "Task", paged=True),
    }


def _common_schemas() -> dict[str, Schema]:
    return {
        "Problem": obj(
            {
                "type": STRING,
                "title": STRING,
                "status": {"type": "integer"},
                "detail": STRING,
                "code": STRING,
            },
            ("type", "title", "status", "detail", "code"),
        ),
        "PageInfo": obj(
            {"has_next_page": BOOLEAN, "next_cursor": NULLABLE_STRING},
            ("has_next_page", "next_cursor"),
        ),
        "Factory": obj(
            {
                "uid": STRING,
                "name": STRING,
                "alias": NULLABLE_STRING,
                "team_uid": STRING,
                "foreman_agent_uid": NULLABLE_STRING,
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
            },
            ("uid", "name", "team_uid"),
        ),
        "FactoryList": list_of("factories", "Factory", paged=True),
        "EgressRanges": obj(
            {key: {"type": "array", "items": STRING} for key in ("ranges", "ipv4", "ipv6")},
            ("ranges", "ipv4", "ipv6"),
        ),
        "JsonSchema": {"type": "object", "description": "a JSON Schema 2020-12 document"},
    }


def schemas() -> dict[str, Schema]:
    return {
        **_common_schemas(),
        **_webhook_schemas(),
        **_automation_schemas(),
        **_run_schemas(),
        **_task_schemas(),
    }
