"""The OpenAPI 3.1 document of every endpoint the app serves (API and webhook ingress).

To describe a new endpoint, add one `Endpoint` to ENDPOINTS (and any schema to
openapi_components); tests/api/test_openapi_sync.py fails until the app and this list agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gateway.api.openapi_components import (
    BOOLEAN,
    RUN_STATES,
    STRING,
    TASK_STAGES,
    TIMESTAMP,
    Schema,
    ref,
    schemas,
)

API = "/api/v1"
INGRESS = "/webhooks/w/{webhook_uid}"
ERROR_TEXT = {
    400: "Invalid request; `detail` names the offending field",
    401: "Authentication required or failed",
    403: "Access denied",
    404: "Not found or not accessible",
    409: "Conflict",
    413: "Body too large",
    422: "Request cannot be processed",
    429: "Too many requests; see Retry-After",
}
LIMIT: Schema = {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}
ORDER: Schema = {"enum": ["asc", "desc"], "default": "desc"}


@dataclass(frozen=True)
class Query:
    name: str
    schema: Schema
    required: bool = False
    repeatable: bool = False


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str  # as served, including /api/v1 for the API
    summary: str
    tag: str
    ok: int = 200
    response: str | Schema | None = None  # a component name, an inline schema, or no body
    body: str | Schema | None = None
    errors: tuple[int, ...] = (401, 403, 404)
    query: tuple[Query, ...] = ()
    team: bool = False  # accepts X-Service-Team-Uid
    public: bool = False  # no bearer authentication
    body_required: bool = True
    notes: str = field(default="")


def _webhooks() -> list[Endpoint]:
    base = f"{API}/factory/{{uid}}/webhooks"
    one = f"{base}/{{webhook_uid}}"
    page = (Query("limit", LIMIT), Query("cursor", STRING))
    return [
        Endpoint(
            "POST",
            base,
            "Create a webhook",
            "webhooks",
            201,
            "Webhook",
            "WebhookCreate",
            (400, 401, 403, 404, 409),
            notes="The 21st live webhook of a factory is 409 `webhook_limit_reached`.",
        ),
        Endpoint("GET", base, "List live webhooks", "webhooks", response="WebhookList"),
        Endpoint("GET", one, "Get a webhook", "webhooks", response="Webhook"),
        Endpoint(
            "PATCH",
            one,
            "Change name, enabled or delivery_id_header",
            "webhooks",
            response="Webhook",
            body="WebhookPatch",
            errors=(400, 401, 403, 404),
        ),
        Endpoint("DELETE", one, "Delete a webhook (senders get 404)", "webhooks", 204),
        Endpoint(
            "POST",
            f"{one}/rotate-secret",
            "Rotate the secret; the old one stops at once",
            "webhooks",
            response="RotatedSecret",
            body="RotateSecret",
            errors=(400, 401, 403, 404, 409),
            body_required=False,
        ),
        Endpoint(
            "GET",
            f"{one}/deliveries",
            "Delivery log, newest first",
            "deliveries",
            response="DeliveryList",
            errors=(400, 401, 403, 404),
            query=page,
        ),
        Endpoint(
            "GET",
            f"{one}/deliveries/{{delivery_id}}",
            "One delivery, with its payload",
            "deliveries",
            response="Delivery",
        ),
    ]


def _automations() -> list[Endpoint]:
    base = f"{API}/factory/{{uid}}/automations"
    one = f"{base}/{{automation_uid}}"
    bad = (400, 401, 403, 404)
    return [
        Endpoint(
            "POST",
            base,
            "Create an automation",
            "automations",
            201,
            "Automation",
            "AutomationCreate",
            bad,
            notes="An invalid payload filter is a 400 whose detail gives its JSON path.",
        ),
        Endpoint("GET", base, "List automations", "automations", response="AutomationList"),
        Endpoint("GET", one, "Get an automation", "automations", response="Automation"),
        Endpoint(
            "PATCH",
            one,
            "Change an automation",
            "automations",
            response="Automation",
            body="AutomationPatch",
            errors=bad,
        ),
        Endpoint("DELETE", one, "Delete an automation", "automations", 204),
    ]


def _runs() -> list[Endpoint]:
    run = f"{API}/agent/runs/{{run_id}}"
    conversation = f"{API}/agent/conversations/{{conversation_id}}"
    filters = (
        Query("state", {"enum": RUN_STATES}, repeatable=True),
        *(Query(n, STRING) for n in ("name", "model_id", "creator", "source", "q", "cursor")),
        *(Query(n, TIMESTAMP) for n in ("created_after", "created_before", "updated_after")),
        Query("limit", LIMIT),
        Query("sort_by", {"enum": ["created_at", "updated_at"], "default": "updated_at"}),
        Query("sort_order", ORDER),
    )
    follow = ("FollowUp", (400, 401, 403, 404, 422))
    return [
        Endpoint(
            "POST",
            f"{API}/agent/runs",
            "Create a run",
            "runs",
            200,
            "RunCreated",
            "RunCreate",
            (400, 401),
        ),
        Endpoint(
            "GET",
            f"{API}/agent/runs",
            "List runs",
            "runs",
            response="RunList",
            errors=(400, 401),
            query=filters,
        ),
        Endpoint("GET", run, "Get a run", "runs", response="Run"),
        Endpoint(
            "POST",
            f"{run}/followups",
            "Send a follow-up",
            "runs",
            body=follow[0],
            errors=follow[1],
        ),
        Endpoint(
            "POST",
            f"{run}/cancel",
            "Cancel a run; answers its id",
            "runs",
            response=STRING,
            errors=(400, 401, 403, 404, 409, 422),
        ),
        Endpoint("POST", f"{run}/interrupt", "Interrupt the current turn", "runs", 202),
        Endpoint(
            "POST",
            f"{conversation}/followups",
            "Follow-up to the newest run",
            "runs",
            body=follow[0],
            errors=follow[1],
        ),
        Endpoint("POST", f"{conversation}/interrupt", "Interrupt the newest run", "runs", 202),
        Endpoint(
            "POST",
            f"{conversation}/attachments/prepare",
            "Prepare attachments",
            "runs",
            response={"type": "object"},
            body="AttachmentsPrepare",
            errors=(400, 401, 403, 404),
        ),
        Endpoint(
            "POST",
            f"{API}/factory/{{uid}}/runs",
            "Dispatch a run to a factory",
            "factories",
            201,
            "Run",
            "FactoryRunCreate",
            (400, 401, 403, 404, 409),
        ),
    ]


def _tasks() -> list[Endpoint]:
    base = f"{API}/factory/{{uid}}/tasks"
    one = f"{base}/{{task_uid}}"
    listing = (
        Query("stage", {"enum": TASK_STAGES}, repeatable=True),
        Query("created_by", STRING, repeatable=True),
        Query("q", STRING),
        *(Query(n, TIMESTAMP) for n in ("created_after", "created_before", "updated_after")),
        Query("sort_by", {"enum": ["created_at", "updated_at"], "default": "created_at"}),
        Query("sort_order", ORDER),
        Query("limit", LIMIT),
        Query("cursor", STRING),
        Query("full_list", BOOLEAN),
        Query("include_current_run", BOOLEAN),
    )
    bad = (400, 401, 403, 404)
    return [
        Endpoint(
            "POST",
            base,
            "Create a task",
            "tasks",
            201,
            "Task",
            "TaskCreate",
            (400, 401, 403, 404, 409),
        ),
        Endpoint(
            "GET", base, "List tasks", "tasks", response="TaskList", errors=bad, query=listing
        ),
        Endpoint("GET", one, "Get a task", "tasks", response="Task"),
        Endpoint(
            "PATCH", one, "Change a task", "tasks", response="Task", body="TaskPatch", errors=bad
        ),
        Endpoint("DELETE", one, "Delete a task (soft)", "tasks", 204),
        Endpoint(
            "POST",
            f"{one}/cancel",
            "Cancel the task's current run",
            "tasks",
            response="Task",
            errors=(400, 401, 403, 404, 409, 422),
        ),
        Endpoint(
            "GET",
            f"{API}/factory/{{uid}}/task-by-conversation",
            "Task bound to a conversation",
            "tasks",
            response="Task",
            errors=bad,
            query=(Query("conversation_id", STRING, required=True),),
        ),
        Endpoint(
            "GET",
            f"{API}/factory/{{uid}}/task-by-run",
            "Task of a run's tree",
            "tasks",
            response="Task",
            errors=bad,
            query=(Query("run_id", STRING, required=True),),
        ),
    ]


def _platform() -> list[Endpoint]:
    return [
        Endpoint(
            "GET",
            f"{API}/factory",
            "List accessible factories",
            "factories",
            response="FactoryList",
            errors=(400, 401, 403),
            team=True,
            query=(
                Query("team_uid", STRING),
                Query("search", STRING),
                Query("limit", LIMIT),
                Query("cursor", STRING),
            ),
        ),
        Endpoint("GET", f"{API}/factory/{{uid}}", "Get a factory", "factories", response="Factory"),
        Endpoint(
            "GET",
            f"{API}/networking/egress-ranges",
            "Egress IP ranges of hosted agents",
            "networking",
            response="EgressRanges",
            errors=(401, 403),
            team=True,
        ),
        Endpoint(
            "GET",
            f"{API}/factory-files/schemas/v1alpha1/factory.schema.json",
            "JSON Schema of factory definition files",
            "factory-files",
            response="JsonSchema",
            errors=(401,),
        ),
        Endpoint(
            "GET",
            f"{API}/openapi.json",
            "This document",
            "meta",
            response={"type": "object"},
            errors=(),
            public=True,
        ),
    ]


def _ingress() -> list[Endpoint]:
    any_json: Schema = {"description": "any JSON value, at most 262,144 bytes"}
    errors = (400, 401, 404, 413, 429)
    note = "Authenticated by the webhook's own mode, not by an API key."
    return [
        Endpoint(
            "POST",
            INGRESS,
            "Deliver an event (token or signature mode)",
            "ingress",
            202,
            "IngressAccepted",
            any_json,
            errors,
            public=True,
            notes=note,
        ),
        Endpoint(
            "POST",
            f"{INGRESS}/{{token}}",
            "Deliver an event (url_token mode)",
            "ingress",
            202,
            "IngressAccepted",
            any_json,
            errors,
            public=True,
            notes=note,
        ),
    ]


def endpoints() -> list[Endpoint]:
    return [*_platform(), *_webhooks(), *_automations(), *_runs(), *_tasks(), *_ingress()]


def build_document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints():
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = _operation(endpoint)
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {"title": "Agent Run, Factory and Webhook Platform API", "version": "1.0.0"},
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": schemas(),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _operation(endpoint: Endpoint) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "summary": endpoint.summary,
        "tags": [endpoint.tag],
        "operationId": _operation_id(endpoint),
        "parameters": _parameters(endpoint),
        "responses": _responses(endpoint),
    }
    if endpoint.notes:
        operation["description"] = endpoint.notes
    if endpoint.public:
        operation["security"] = []
    if endpoint.body is not None:
        operation["requestBody"] = {
            "required": endpoint.body_required,
            "content": {"application/json": {"schema": _schema(endpoint.body)}},
        }
    return operation


def _operation_id(endpoint: Endpoint) -> str:
    words = re.sub(r"[{}]", "", endpoint.path.removeprefix(API)).replace("-", "_")
    return endpoint.method.lower() + "_".join(w for w in words.split("/") if w)


def _parameters(endpoint: Endpoint) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": STRING}
        for name in re.findall(r"{(\w+)}", endpoint.path)
    ]
    for query in endpoint.query:
        schema = {"type": "array", "items": query.schema} if query.repeatable else query.schema
        params.append(
            {"name": query.name, "in": "query", "required": query.required, "schema": schema}
        )
    if endpoint.team:
        params.append({"name": "X-Service-Team-Uid", "in": "header", "schema": STRING})
    return params


def _responses(endpoint: Endpoint) -> dict[str, Any]:
    ok: dict[str, Any] = {"description": "Success"}
    if endpoint.response is not None:
        ok["content"] = {"application/json": {"schema": _schema(endpoint.response)}}
    responses = {str(endpoint.ok): ok}
    for status in (*endpoint.errors, 500):
        responses[str(status)] = {
            "description": ERROR_TEXT.get(status, "Internal server error"),
            "content": {"application/problem+json": {"schema": ref("Problem")}},
        }
    return responses


def _schema(value: str | Schema) -> Schema:
    return ref(value) if isinstance(value, str) else value
