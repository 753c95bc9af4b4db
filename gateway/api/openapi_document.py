"""The OpenAPI 3.1 document of every endpoint the app serves (API and webhook ingress).

To describe a new endpoint, add one `Endpoint` to ENDPOINTS (and any schema to
openapi_components); tests/api/test_openapi_sync.py fails until the app and this list agree, and
checks real responses against the documented schemas.
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
    400: "Invalid request (`invalid_request`); `detail` names the offending field",
    401: "Authentication required or failed (`unauthenticated`)",
    403: "Access denied (`forbidden`)",
    404: "Not found or not accessible (`not_found`)",
    408: "Body not received in time (`request_timeout`)",
    409: "Conflict",
    413: "Body too large (`payload_too_large`)",
    422: "Request cannot be processed",
    429: "Too many requests (`rate_limited`); see Retry-After",
    503: "Temporarily unavailable (`unavailable`); see Retry-After",
}
RETRY_AFTER = {
    "Retry-After": {
        "description": "whole seconds to wait before retrying (at least 1)",
        "schema": {"type": "integer", "minimum": 1},
    }
}
# every API handler authenticates (401) and refuses NUL in path and query values (400)
API_ERRORS = (400, 401, 403, 404)
RUN_ERRORS = (400, 401, 404)  # a run the caller cannot see is a 404, never a 403
LIMIT: Schema = {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}
ORDER: Schema = {"enum": ["asc", "desc"], "default": "desc"}
FLAG: Schema = {**BOOLEAN, "default": False, "description": "true or false (also 1 or 0)"}
CURSOR: Schema = {"type": "string", "description": "page_info.next_cursor of the previous page"}
AFTER: Schema = {**TIMESTAMP, "description": "RFC 3339 with a time zone offset"}


@dataclass(frozen=True)
class Query:
    name: str
    schema: Schema
    required: bool = False
    repeatable: bool = False
    description: str = ""


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str  # as served, including /api/v1 for the API
    summary: str
    tag: str
    ok: int = 200
    response: str | Schema | None = None  # a component name, an inline schema, or no body
    body: str | Schema | None = None
    errors: tuple[int, ...] = API_ERRORS
    query: tuple[Query, ...] = ()
    team: bool = False  # accepts X-Service-Team-Uid
    public: bool = False  # no bearer authentication
    body_required: bool = True
    notes: str = field(default="")
    problems: tuple[tuple[int, str], ...] = ()  # what a status means here (its error codes)
    media_type: str = "application/json"


def _page() -> tuple[Query, ...]:
    return (Query("limit", LIMIT), Query("cursor", CURSOR))


def _webhooks() -> list[Endpoint]:
    base = f"{API}/factory/{{uid}}/webhooks"
    one = f"{base}/{{webhook_uid}}"
    return [
        Endpoint(
            "POST",
            base,
            "Create a webhook",
            "webhooks",
            201,
            "Webhook",
            "WebhookCreate",
            (*API_ERRORS, 409),
            notes="The response carries `secret` once when the service generated it.",
            problems=((409, "`webhook_limit_reached`: the factory already has 20 webhooks"),),
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
        ),
        Endpoint("DELETE", one, "Delete a webhook (senders get 404)", "webhooks", 204),
        Endpoint(
            "POST",
            f"{one}/rotate-secret",
            "Rotate the secret; the old one stops at once",
            "webhooks",
            response="RotatedSecret",
            body="RotateSecret",
            errors=(*API_ERRORS, 409),
            body_required=False,
            notes="Token modes and generated standard-webhooks secrets take no body; other "
            "signature schemes need the provider's new `secret`.",
            problems=((409, "`managed_secret`: the webhook reads a team secret; change that"),),
        ),
        Endpoint(
            "GET",
            f"{one}/deliveries",
            "Delivery log, newest first",
            "deliveries",
            response="DeliveryList",
            query=_page(),
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
    filters = "An invalid payload filter is a 400 whose detail gives its JSON path."
    return [
        Endpoint(
            "POST",
            base,
            "Create an automation",
            "automations",
            201,
            "Automation",
            "AutomationCreate",
            notes=filters,
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
            notes=filters,
        ),
        Endpoint("DELETE", one, "Delete an automation", "automations", 204),
    ]


def _run_filters() -> tuple[Query, ...]:
    return (
        Query("state", {"enum": RUN_STATES}, repeatable=True, description="any of these states"),
        Query("name", STRING, description="agent_config.name"),
        Query("config_name", STRING, description="alias of name (name wins)"),
        Query("model_id", STRING, description="agent_config.model_id"),
        Query("creator", STRING, description="creator uid or email (any case)"),
        Query("source", STRING, description="API or WEBHOOK (any case)"),
        Query("q", STRING, description="substring of title or prompt (any case)"),
        *(Query(n, AFTER) for n in ("created_after", "created_before", "updated_after")),
        Query("limit", LIMIT),
        Query("cursor", CURSOR),
        Query("sort_by", {"enum": ["created_at", "updated_at"], "default": "updated_at"}),
        Query("sort_order", ORDER),
    )


def _runs() -> list[Endpoint]:
    run = f"{API}/agent/runs/{{run_id}}"
    conversation = f"{API}/agent/conversations/{{conversation_id}}"
    unknown_attachment = ((422, "`unknown_attachment`: not prepared for the receiving run"),)
    not_live = ((409, "`run_not_live`: only a CLAIMED or INPROGRESS cloud run"),)
    return [
        Endpoint(
            "POST",
            f"{API}/agent/runs",
            "Create a run",
            "runs",
            200,
            "RunCreated",
            "RunCreate",
            (400, 401, 403),
            team=True,
            problems=((403, "`forbidden`: X-Service-Team-Uid is not a team of the caller"),),
        ),
        Endpoint(
            "GET",
            f"{API}/agent/runs",
            "List runs",
            "runs",
            response="RunList",
            errors=(400, 401),
            query=_run_filters(),
        ),
        Endpoint("GET", run, "Get a run", "runs", response="Run", errors=RUN_ERRORS),
        Endpoint(
            "POST",
            f"{run}/followups",
            "Send a follow-up",
            "runs",
            response="FollowUpResult",
            body="FollowUp",
            errors=(*RUN_ERRORS, 422),
            problems=unknown_attachment,
        ),
        Endpoint(
            "POST",
            f"{run}/cancel",
            "Cancel a run and its descendants; answers its id",
            "runs",
            response={"type": "string", "description": "the run id"},
            errors=(*RUN_ERRORS, 409, 422),
            problems=(
                (400, "`run_terminal`: the run already ended; or `invalid_request`"),
                (409, "`run_pending`: the run is PENDING; retry after a moment"),
                (422, "`not_cancellable`: the service cannot stop runs of this type"),
            ),
        ),
        Endpoint(
            "POST",
            f"{run}/interrupt",
            "Interrupt the current turn",
            "runs",
            202,
            "InterruptResult",
            errors=(*RUN_ERRORS, 409),
            problems=not_live,
        ),
        Endpoint(
            "POST",
            f"{conversation}/followups",
            "Follow-up to the newest run",
            "runs",
            response="FollowUpResult",
            body="FollowUp",
            errors=(*RUN_ERRORS, 422),
            problems=unknown_attachment,
        ),
        Endpoint(
            "POST",
            f"{conversation}/interrupt",
            "Interrupt the newest run",
            "runs",
            202,
            "InterruptResult",
            errors=(*RUN_ERRORS, 409),
            problems=not_live,
        ),
        Endpoint(
            "POST",
            f"{conversation}/attachments/prepare",
            "Prepare attachments for the newest run",
            "runs",
            response="PreparedAttachments",
            body="AttachmentsPrepare",
            errors=RUN_ERRORS,
            body_required=False,
        ),
        Endpoint(
            "POST",
            f"{API}/factory/{{uid}}/runs",
            "Dispatch a run to a factory's foreman",
            "factories",
            201,
            "Run",
            "FactoryRunCreate",
            (*API_ERRORS, 409),
            notes="The factory task bound to the run's conversation is created just after.",
            problems=((409, "`no_foreman`: the factory has no foreman agent"),),
        ),
    ]


def _task_filters() -> tuple[Query, ...]:
    return (
        Query("stage", {"enum": TASK_STAGES}, repeatable=True, description="any of these stages"),
        Query("created_by", STRING, repeatable=True, description="creator emails (any case)"),
        Query("q", STRING, description="substring of the title (any case)"),
        *(Query(n, AFTER) for n in ("created_after", "created_before", "updated_after")),
        Query("sort_by", {"enum": ["created_at", "updated_at"], "default": "created_at"}),
        Query("sort_order", ORDER),
        Query("limit", LIMIT),
        Query("cursor", CURSOR),
        Query("full_list", FLAG, description="add ticket_source, ticket_id and outputs"),
        Query("include_current_run", FLAG, description="add current_run"),
    )


def _tasks() -> list[Endpoint]:
    base = f"{API}/factory/{{uid}}/tasks"
    one = f"{base}/{{task_uid}}"
    return [
        Endpoint(
            "POST",
            base,
            "Create a task",
            "tasks",
            201,
            "Task",
            "TaskCreate",
            (*API_ERRORS, 409),
            problems=((409, "`conflict`: the conversation is already bound to a live task"),),
        ),
        Endpoint("GET", base, "List tasks", "tasks", response="TaskList", query=_task_filters()),
        Endpoint("GET", one, "Get a task", "tasks", response="Task"),
        Endpoint("PATCH", one, "Change a task", "tasks", response="Task", body="TaskPatch"),
        Endpoint("DELETE", one, "Delete a task (soft)", "tasks", 204),
        Endpoint(
            "POST",
            f"{one}/cancel",
            "Cancel the task's current run; the task becomes CANCELLED",
            "tasks",
            response="Task",
            errors=(*API_ERRORS, 409, 422),
            notes="Answers the task with `current_run`.",
            problems=(
                (400, "`run_terminal`: the current run already ended; or `invalid_request`"),
                (403, "`forbidden`: factory, or the current run, not accessible"),
                (404, "`not_found`: no such task, or it has no current run"),
                (409, "`run_pending`: the current run is PENDING; retry after a moment"),
                (422, "`not_cancellable`: the service cannot stop runs of this type"),
            ),
        ),
        Endpoint(
            "GET",
            f"{API}/factory/{{uid}}/task-by-conversation",
            "Task bound to a conversation",
            "tasks",
            response="Task",
            query=(Query("conversation_id", STRING, required=True),),
        ),
        Endpoint(
            "GET",
            f"{API}/factory/{{uid}}/task-by-run",
            "Task of a run's tree",
            "tasks",
            response="Task",
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
            query=(Query("team_uid", STRING), Query("search", STRING), *_page()),
        ),
        Endpoint("GET", f"{API}/factory/{{uid}}", "Get a factory", "factories", response="Factory"),
        Endpoint(
            "GET",
            f"{API}/networking/egress-ranges",
            "Egress IP ranges of hosted agents",
            "networking",
            response="EgressRanges",
            errors=(400, 401, 403),
            team=True,
        ),
        Endpoint(
            "GET",
            f"{API}/factory-files/schemas/v1alpha1/factory.schema.json",
            "JSON Schema of factory definition files",
            "factory-files",
            response="JsonSchema",
            errors=(400, 401),
            media_type="application/schema+json",
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
    errors = (400, 401, 404, 408, 413, 429, 503)
    note = (
        "Authenticated by the webhook's own mode, not by an API key. A duplicate delivery is "
        "a 202 with the first delivery's `delivery_id`."
    )
    problems = ((400, "`invalid_json`: the body is not JSON"),)
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
            problems=problems,
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
            problems=problems,
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
        param: dict[str, Any] = {
            "name": query.name,
            "in": "query",
            "required": query.required,
            "schema": schema,
        }
        if query.repeatable:
            param |= {"style": "form", "explode": True}
        if query.description:
            param["description"] = query.description
        params.append(param)
    if endpoint.team:
        params.append(
            {
                "name": "X-Service-Team-Uid",
                "in": "header",
                "required": False,
                "schema": STRING,
                "description": "act in this team of the caller's (403 if not one)",
            }
        )
    return params


def _responses(endpoint: Endpoint) -> dict[str, Any]:
    ok: dict[str, Any] = {"description": "Success"}
    if endpoint.response is not None:
        ok["content"] = {endpoint.media_type: {"schema": _schema(endpoint.response)}}
    responses = {str(endpoint.ok): ok}
    meaning = dict(endpoint.problems)
    for status in (*endpoint.errors, 500):
        response: dict[str, Any] = {
            "description": meaning.get(status, ERROR_TEXT.get(status, "Internal server error")),
            "content": {"application/problem+json": {"schema": ref("Problem")}},
        }
        if status in (429, 503):
            response["headers"] = RETRY_AFTER
        responses[str(status)] = response
    return responses


def _schema(value: str | Schema) -> Schema:
    return ref(value) if isinstance(value, str) else value
