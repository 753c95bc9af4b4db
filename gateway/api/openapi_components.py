"""Reusable schemas of the OpenAPI document (components/schemas), as plain JSON Schema dicts.

Response schemas list as `required` every field the renderer always writes (null included where
the value can be null); fields the renderer writes only in some cases are optional properties.
Request schemas mirror the handlers' parsers: unknown fields are a 400 (additionalProperties:
false), and a null optional field counts as absent unless the schema says otherwise.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.runs import RUN_STATES as run_states
from gateway.domain.tasks import STAGES as task_stages
from gateway.domain.webhooks import AUTH_MODES as auth_modes
from gateway.ingress.signatures import SCHEMES

Schema = dict[str, Any]

STRING: Schema = {"type": "string"}
NULLABLE_STRING: Schema = {"type": ["string", "null"]}
BOOLEAN: Schema = {"type": "boolean"}
INTEGER: Schema = {"type": "integer"}
TIMESTAMP: Schema = {"type": "string", "format": "date-time", "description": "RFC 3339, UTC"}
# the enums come from the code that enforces them
RUN_STATES = list(run_states)
TASK_STAGES = list(task_stages)
AUTH_MODES = list(auth_modes)
SIGNATURE_SCHEMES = sorted(SCHEMES)
DELIVERY_LABELS = [
    "Accepted",
    "Duplicate",
    "Rejected (auth)",
    "Rejected (invalid JSON)",
    "Rejected (too large)",
    "Rejected (rate limited)",
]
FOLLOWUP_ROUTINGS = ["queued", "injected", "resumed", "debug"]
TICKET_SOURCES = ["repository_issue", "issue_key", "reference"]
CONFIG_KEYS = ("name", "model_id", "base_prompt", "environment_id", "worker_host", "skill_spec")


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Schema) -> Schema:
    """`schema` or null (a $ref cannot take a sibling type, so this is an anyOf)."""
    return {"anyOf": [schema, {"type": "null"}]}


def text(max_length: int, *, null: bool = False, **extra: Any) -> Schema:
    """A non-blank string of at most `max_length` characters (optionally null)."""
    schema: Schema = {
        "type": ["string", "null"] if null else "string",
        "minLength": 1,
        "maxLength": max_length,
        "pattern": r"\S",
        **extra,
    }
    return schema


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
    name = text(200)
    header: Schema = {"type": ["string", "null"], "pattern": "^[A-Za-z0-9-]{1,100}$"}
    secret: Schema = {
        "type": ["string", "null"],
        "minLength": 1,
        "description": "signature mode only: the provider's signing secret",
    }
    shown_once: Schema = {
        "type": "string",
        "description": "only when the service generated it; shown once",
    }
    return {
        "WebhookCreate": obj(
            {
                "name": name,
                "auth_mode": {"enum": AUTH_MODES, "default": "token"},
                "signature_scheme": {
                    "enum": [*SIGNATURE_SCHEMES, None],
                    "description": "required with auth_mode signature, and only then",
                },
                "secret": secret,
                "secret_name": {
                    "type": ["string", "null"],
                    "minLength": 1,
                    "description": "an existing team secret (not together with secret)",
                },
                "delivery_id_header": header,
                "enabled": {"type": "boolean", "default": True},
            },
            ("name",),
            additionalProperties=False,
            **{
                "if": {
                    "properties": {"auth_mode": {"const": "signature"}},
                    "required": ["auth_mode"],
                },
                "then": {"required": ["signature_scheme"]},
                "else": {
                    "properties": {"signature_scheme": {"type": "null"}, "secret": {"type": "null"}}
                },
            },
        ),
        "WebhookPatch": obj(
            {"name": name, "enabled": BOOLEAN, "delivery_id_header": header},
            additionalProperties=False,
        ),
        "RotateSecret": obj({"secret": secret}, additionalProperties=False),
        "RotatedSecret": obj({"ingress_url": STRING, "secret": shown_once}, ("ingress_url",)),
        "Webhook": obj(
            {
                "uid": STRING,
                "factory_uid": STRING,
                "name": STRING,
                "auth_mode": {"enum": AUTH_MODES},
                "signature_scheme": {"enum": [*SIGNATURE_SCHEMES, None]},
                "secret_name": NULLABLE_STRING,
                "delivery_id_header": {
                    "type": ["string", "null"],
                    "description": "lower-cased header name",
                },
                "enabled": BOOLEAN,
                "has_secret": BOOLEAN,
                "ingress_url": {
                    "type": "string",
                    "description": "url_token mode: ends in the token when it was just generated, "
                    "else in the placeholder {token}",
                },
                "secret": shown_once,
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
            },
            (
                "uid",
                "factory_uid",
                "name",
                "auth_mode",
                "signature_scheme",
                "secret_name",
                "delivery_id_header",
                "enabled",
                "has_secret",
                "ingress_url",
                "created_at",
                "updated_at",
            ),
        ),
        "WebhookList": list_of("webhooks", "Webhook"),
        "DeliveryRun": obj(
            {"automation_uid": STRING, "run_id": STRING}, ("automation_uid", "run_id")
        ),
        "Delivery": obj(
            {
                "delivery_id": STRING,
                "received_at": TIMESTAMP,
                "size": {"type": "integer", "minimum": 0, "description": "body size in bytes"},
                "label": {"enum": DELIVERY_LABELS},
                "evaluation": {
                    "enum": ["pending", "evaluated", None],
                    "description": "accepted deliveries: pending until matched against the "
                    "automations (the runs are listed then); null for the others",
                },
                "evaluated_at": {
                    "oneOf": [TIMESTAMP, {"type": "null"}],
                    "description": "when the evaluator matched it (accepted deliveries)",
                },
                "runs": {
                    "type": "array",
                    "items": ref("DeliveryRun"),
                    "description": "runs started by matching automations",
                },
                "payload": {"description": "the JSON body; accepted deliveries, on GET one only"},
            },
            ("delivery_id", "received_at", "size", "label", "evaluation", "evaluated_at", "runs"),
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
                        "description": "exactly one webhook of this factory",
                    },
                    "payload": {
                        "type": ["object", "null"],
                        "description": "payload filter (CONTRACT 7); absent or {} matches all",
                    },
                },
                ("webhook_ids",),
                additionalProperties=False,
            ),
        },
        ("provider", "event", "filter"),
        additionalProperties=False,
    )
    triggers: Schema = {"type": "array", "items": ref("Trigger"), "minItems": 1, "maxItems": 20}
    fields: dict[str, Schema] = {
        "name": text(200),
        "prompt": text(100_000),
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
                "name": STRING,
                "prompt": STRING,
                "enabled": BOOLEAN,
                "triggers": {"type": "array", "items": ref("Trigger")},
                "webhooks_deleted": {
                    "type": "array",
                    "items": STRING,
                    "description": "trigger webhooks since deleted (those triggers never fire)",
                },
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
            },
            (
                "uid",
                "factory_uid",
                "name",
                "prompt",
                "enabled",
                "triggers",
                "webhooks_deleted",
                "created_at",
                "updated_at",
            ),
        ),
        "AutomationList": list_of("automations", "Automation"),
    }


def _run_request_schemas() -> dict[str, Schema]:
    one_of = "give at most one of parent_run_id and conversation_id"
    return {
        "RunCreate": obj(
            {
                "prompt": text(100_000),
                "title": text(500, null=True),
                "config": nullable(ref("AgentConfigInput")),
                "parent_run_id": text(
                    64, null=True, description=f"start a child in this run's tree; {one_of}"
                ),
                "conversation_id": text(
                    64, null=True, description=f"a new top-level run continuing it; {one_of}"
                ),
            },
            ("prompt",),
            additionalProperties=False,
        ),
        "AgentConfigInput": obj(
            {key: {"type": ["string", "null"], "maxLength": 2000} for key in CONFIG_KEYS}
            | {"mcp_servers": {"type": "object"}},
            additionalProperties=False,
            description="null values are dropped",
        ),
        "FollowUp": obj(
            {
                "message": text(100_000),
                "attachments": {
                    "type": ["array", "null"],
                    "items": {"type": "string", "minLength": 1, "maxLength": 64},
                    "maxItems": 20,
                    "description": "attachment ids prepared for the run that receives it",
                },
                "mode": {"type": ["string", "null"], "pattern": "^[a-z][a-z0-9_-]{0,31}$"},
            },
            ("message",),
            additionalProperties=False,
        ),
        "FactoryRunCreate": obj(
            {
                "prompt": text(100_000),
                "title": text(500, null=True),
                "ticket_ref": {
                    "type": ["string", "null"],
                    "pattern": "^[A-Za-z0-9_.#/-]{1,200}$",
                    "description": "for example PROJ-123 or owner/repo#123",
                },
                "ticket_url": {
                    "type": ["string", "null"],
                    "format": "uri",
                    "maxLength": 2000,
                    "description": "an http or https URL",
                },
            },
            ("prompt",),
            additionalProperties=False,
        ),
        "AttachmentsPrepare": obj(
            {
                "files": {
                    "type": ["array", "null"],
                    "items": obj(
                        {"name": text(300, null=True)},
                        additionalProperties=False,
                    ),
                    "minItems": 1,
                    "maxItems": 20,
                    "description": "absent: one attachment without a name",
                }
            },
            additionalProperties=False,
        ),
    }


def _run_response_schemas() -> dict[str, Schema]:
    state: Schema = {"enum": RUN_STATES}
    return {
        "AgentConfig": obj(
            {key: STRING for key in CONFIG_KEYS} | {"mcp_servers": {"type": "object"}}
        ),
        "Creator": obj(
            {
                "uid": STRING,
                "email": NULLABLE_STRING,
                "display_name": STRING,
                "type": {"enum": ["user", "service_account"]},
            },
            ("uid", "email", "display_name", "type"),
        ),
        "StatusMessage": obj(
            {"message": STRING, "error_code": NULLABLE_STRING, "retryable": BOOLEAN},
            ("message", "error_code", "retryable"),
        ),
        "Artifact": obj(
            {
                "type": STRING,
                "name": STRING,
                "content_type": STRING,
                "size": INTEGER,
                "attachment_id": STRING,
            },
            description="for example the payload of the delivery that started the run",
        ),
        "RunCreated": obj(
            {"run_id": STRING, "task_id": STRING, "state": state},
            ("run_id", "task_id", "state"),
        ),
        "Run": obj(
            {
                "run_id": STRING,
                "task_id": {"type": "string", "description": "equals run_id"},
                "title": NULLABLE_STRING,
                "prompt": STRING,
                "state": state,
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
                "conversation_id": STRING,
                "source": {"type": "string", "description": "API or WEBHOOK"},
                "is_run_type_cancellable": BOOLEAN,
                "started_at": TIMESTAMP,
                "session_id": STRING,
                "session_link": STRING,
                "parent_run_id": STRING,
                "agent_config": ref("AgentConfig"),
                "creator": ref("Creator"),
                "metadata": {
                    "type": "object",
                    "additionalProperties": STRING,
                    "description": "webhook runs: automation_id, webhook_uid, delivery_id",
                },
                "status_message": ref("StatusMessage"),
                "artifacts": {"type": "array", "items": ref("Artifact")},
            },
            (
                "run_id",
                "task_id",
                "title",
                "prompt",
                "state",
                "created_at",
                "updated_at",
                "conversation_id",
                "source",
                "is_run_type_cancellable",
            ),
            description="RunItem (CONTRACT 3); optional fields are omitted when unknown",
        ),
        "RunList": list_of("runs", "Run", paged=True),
        "FollowUpResult": obj(
            {"run_id": STRING, "state": state, "routing": {"enum": FOLLOWUP_ROUTINGS}},
            ("run_id", "state", "routing"),
        ),
        "InterruptResult": obj(
            {"run_id": STRING, "state": state, "interrupted": {"const": True}},
            ("run_id", "state", "interrupted"),
        ),
        "PreparedAttachments": obj(
            {
                "attachments": {
                    "type": "array",
                    "items": obj(
                        {"attachment_id": STRING, "name": NULLABLE_STRING},
                        ("attachment_id", "name"),
                    ),
                },
                "run_id": {"type": "string", "description": "the run the ids are valid for"},
                "conversation_id": STRING,
            },
            ("attachments", "run_id", "conversation_id"),
        ),
    }


def _task_schemas() -> dict[str, Schema]:
    stage: Schema = {"enum": TASK_STAGES}
    return {
        "TaskCreate": obj(
            {
                "title": text(500),
                "conversation_id": text(64),
                "stage": {"enum": [*TASK_STAGES, None], "default": "TRIAGE"},
            },
            ("title", "conversation_id"),
            additionalProperties=False,
        ),
        "TaskPatch": obj(
            {"title": text(500), "description": {"type": ["string", "null"], "maxLength": 100_000}}
            | {"stage": stage},
            additionalProperties=False,
            minProperties=1,
        ),
        "TaskOutput": obj(
            {
                "id": STRING,
                "kind": {"type": "string", "description": "for example pull_request"},
                "title": NULLABLE_STRING,
                "url": NULLABLE_STRING,
                "created_at": TIMESTAMP,
            },
            ("id", "kind", "title", "url", "created_at"),
        ),
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
                "created_by": ref("Creator"),
                "ticket_source": {
                    "enum": [*TICKET_SOURCES, None],
                    "description": "full form only (GET one, or list with full_list)",
                },
                "ticket_id": {
                    "type": ["string", "null"],
                    "description": "full form only; issue keys upper-cased",
                },
                "outputs": {
                    "type": "array",
                    "items": ref("TaskOutput"),
                    "description": "full form only: derived outputs, newest first",
                },
                "current_run": {
                    **nullable(ref("Run")),
                    "description": "with include_current_run (and from cancel): the "
                    "conversation's newest top-level run",
                },
            },
            (
                "uid",
                "factory_uid",
                "title",
                "description",
                "stage",
                "conversation_id",
                "created_at",
                "updated_at",
            ),
            description="created_by is omitted when the creator is unknown",
        ),
        "TaskList": list_of("tasks", "Task", paged=True),
    }


def _common_schemas() -> dict[str, Schema]:
    return {
        "Problem": obj(
            {
                "type": {"type": "string", "description": "about:blank#<code>"},
                "title": STRING,
                "status": {"type": "integer"},
                "detail": {"type": "string", "description": "names the offending field"},
                "code": {"type": "string", "description": "stable snake_case error code"},
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
            (
                "uid",
                "name",
                "alias",
                "team_uid",
                "foreman_agent_uid",
                "created_at",
                "updated_at",
            ),
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
        **_run_request_schemas(),
        **_run_response_schemas(),
        **_task_schemas(),
    }
