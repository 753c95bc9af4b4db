"""The OpenAPI document and the app agree: every served (method, path) is documented and back,
and real responses (status, media type, body) match what the document says of them. (Requests
need no such check: the document's request schemas are the Structs that validate them.)"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import httpx
from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry
from referencing.jsonschema import DRAFT202012
from starlette.routing import BaseRoute, Mount, Route

from gateway.api.routing import ApiRoute
from gateway.app import create_app, openapi_document
from gateway.console.session import PATH as CONSOLE_PATH
from gateway.ingress.endpoint import INGRESS_PREFIX, PROVIDER_PREFIX
from gateway.platform.tasks import tasks
from gateway.services import Services
from tests.conftest import make_settings
from tests.connections import signing
from tests.platform.runs.runs_support import advance
from tests.support import GatewayClient, World

METHODS = {"get", "post", "put", "patch", "delete"}
BASE_URI = "urn:openapi"  # where the document is registered for $ref resolution


def _walk(routes: list[BaseRoute], prefix: str = "") -> Iterator[tuple[str, str]]:
    for route in routes:
        if isinstance(route, Mount) and route.path == CONSOLE_PATH:
            continue  # HTML pages for browsers (docs/console.md), not operations of the API
        if isinstance(route, Mount):
            yield from _walk(list(route.routes), prefix + route.path)
        elif isinstance(route, Route):
            assert isinstance(route, ApiRoute), f"{route.path}: a route without an operation"
            for method in route.methods or ():
                if method.lower() in METHODS:  # HEAD is implied by GET
                    yield method.upper(), prefix + route.path


def served(tmp_path: Path) -> set[tuple[str, str]]:
    app: Any = create_app(make_settings(f"sqlite:///{tmp_path}/gw.db"))
    assert app.ingress is not None  # role "all": the dispatcher sends /webhooks/w/ to ingress
    pairs = set(_walk(app.api.routes))
    # The ingress is one raw ASGI endpoint behind a path prefix, not a router: its two shapes
    ingress = INGRESS_PREFIX + "{webhook_uid}"
    connection = PROVIDER_PREFIX + "{connection_uid}"
    return pairs | {("POST", ingress), ("POST", ingress + "/{token}"), ("POST", connection)}


def documented() -> set[tuple[str, str]]:
    paths: dict[str, dict[str, Any]] = openapi_document()["paths"]
    return {(m.upper(), p) for p, ops in paths.items() for m in ops if m in METHODS}


def test_every_served_endpoint_is_documented(tmp_path: Path) -> None:
    missing = served(tmp_path) - documented()
    assert not missing, f"served but not in the OpenAPI document: {sorted(missing)}"


def test_every_documented_endpoint_is_served(tmp_path: Path) -> None:
    extra = documented() - served(tmp_path)
    assert not extra, f"documented but not served: {sorted(extra)}"


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref":
                yield item
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def test_document_is_well_formed() -> None:
    document = openapi_document()
    assert document["openapi"].startswith("3.1")
    schemas = document["components"]["schemas"]
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)
    for target in _refs(document):
        assert target.startswith("#/components/schemas/")
        assert target.rsplit("/", 1)[1] in schemas, target
    operation_ids = [op["operationId"] for ops in document["paths"].values() for op in ops.values()]
    assert len(operation_ids) == len(set(operation_ids))
    for path, ops in document["paths"].items():
        for op in ops.values():
            declared = {p["name"] for p in op["parameters"] if p["in"] == "path"}
            assert declared == {part[1:-1] for part in path.split("/") if part[:1] == "{"}
            assert "500" in op["responses"]


def test_openapi_json_is_served_without_credentials(tmp_path: Path) -> None:
    settings = make_settings(f"sqlite:///{tmp_path}/gw.db")
    with GatewayClient.running(settings) as client:
        response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == openapi_document()


# --- Response shapes: real responses validated against the documented schemas ---------------

DOCUMENT = openapi_document()


def _closed(value: Any) -> Any:
    """The document with every object schema that lists properties closed to others, so that
    a field the renderer writes but the document does not name fails validation too (for the
    response checks only: the published document leaves responses open to additions)."""
    if isinstance(value, list):
        return [_closed(item) for item in value]
    if not isinstance(value, dict):
        return value
    closed = {key: _closed(item) for key, item in value.items()}
    typed = closed.get("type") == "object" and "properties" in closed
    if typed and "additionalProperties" not in closed:
        closed["additionalProperties"] = False
    return closed


REGISTRY: Registry[Any] = Registry().with_resource(
    BASE_URI, DRAFT202012.create_resource(_closed(DOCUMENT))
)
FORMATS = FormatChecker(formats=())
RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


@FORMATS.checks("date-time", raises=ValueError)
def _utc_date_time(value: object) -> bool:
    """Timestamps are RFC 3339 UTC (docs/runs-and-tasks.md)."""
    if not isinstance(value, str):
        return True
    datetime.fromisoformat(value.replace("Z", "+00:00"))
    return RFC3339_UTC.fullmatch(value) is not None


def _pointer(*parts: str) -> str:
    return "/".join(part.replace("~", "~0").replace("/", "~1") for part in parts)


def _validator(method: str, path: str, status: int, media_type: str) -> Draft202012Validator:
    where = _pointer("paths", path, method.lower(), "responses", str(status), "content")
    target = {"$ref": f"{BASE_URI}#/{where}/{_pointer(media_type)}/schema"}
    return Draft202012Validator(target, registry=REGISTRY, format_checker=FORMATS)


class AnyResponse(Protocol):
    """An HTTP response (httpx's, or the test client's)."""

    @property
    def status_code(self) -> int: ...

    @property
    def content(self) -> bytes: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    def json(self) -> Any: ...


def shape_errors(method: str, path: str, response: AnyResponse) -> list[str]:
    """What is wrong with `response` as an answer of the documented operation (empty: fine)."""
    operation = DOCUMENT["paths"][path][method.lower()]
    documented = operation["responses"].get(str(response.status_code))
    if documented is None:
        return [f"status {response.status_code} is not documented"]
    content = documented.get("content")
    if content is None:
        return [] if not response.content else ["a body where none is documented"]
    media_type = response.headers.get("content-type", "").split(";")[0]
    if media_type not in content:
        return [f"media type {media_type!r} is not documented"]
    validator = _validator(method, path, response.status_code, media_type)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
        for e in validator.iter_errors(_body(response, media_type))
    ]


def _body(response: AnyResponse, media_type: str) -> Any:
    return response.json() if media_type.endswith("json") else response.content.decode()


class Checker:
    """Sends requests as the world's user and checks every answer against the document."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.seen: set[tuple[str, str, int]] = set()

    def __call__(
        self, method: str, path: str, status: int, *, headers: Any = None, **kwargs: Any
    ) -> Any:
        outside = path.startswith(
            ("/webhooks/", "/healthz", "/readyz", "/metrics")
        )  # not under /api/v1
        full = path if outside else f"/api/v1{path}"
        url = full.format(**{"uid": self.world.factory_uid} | kwargs.pop("at", {}))
        response = self.world.client.request(
            method, url, headers=self.world.user if headers is None else headers, **kwargs
        )
        assert response.status_code == status, (method, url, response.text)
        errors = shape_errors(method, full, response)
        assert not errors, f"{method} {full} -> {status}: {errors}\n{response.text}"
        self.seen.add((method, full, status))
        if not response.content:
            return None
        return _body(response, response.headers["content-type"].split(";")[0])

    def eventually(self, probe: Callable[[], Any], timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while (value := probe()) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert value is not None, "condition not met in time"
        return value


WEBHOOKS = "/factory/{uid}/webhooks"
RUN = "/agent/runs/{run_id}"
CONVERSATION = "/agent/conversations/{conversation_id}"
TASKS = "/factory/{uid}/tasks"
TASK = TASKS + "/{task_uid}"


def _trigger(webhook_uid: str, payload: Any = None) -> dict[str, Any]:
    spec = {"webhook_ids": [webhook_uid]} | ({} if payload is None else {"payload": payload})
    return {"provider": "webhook", "event": "received", "filter": spec}


def _webhooks_and_deliveries(check: Checker) -> dict[str, Any]:
    automations = "/factory/{uid}/automations"
    one = WEBHOOKS + "/{webhook_uid}"
    hook = check("POST", WEBHOOKS, 201, json={"name": "hook"})
    url = check("POST", WEBHOOKS, 201, json={"name": "url", "auth_mode": "url_token"})
    signed = {"name": "signed", "auth_mode": "signature", "signature_scheme": "standard_webhooks"}
    signed = check("POST", WEBHOOKS, 201, json=signed | {"delivery_id_header": "X-Id"})
    check("GET", WEBHOOKS, 200)
    check("GET", one, 200, at={"webhook_uid": url["uid"]})
    at = {"webhook_uid": hook["uid"]}
    check("PATCH", one, 200, at=at, json={"enabled": True})
    hook |= check("POST", one + "/rotate-secret", 200, at=at)
    automation = {"name": "every", "prompt": "Handle it.", "triggers": [_trigger(hook["uid"])]}
    check("POST", automations, 201, json=automation)

    orphan = {"name": "orphan", "prompt": "p", "triggers": [_trigger(signed["uid"], {"a": [1]})]}
    orphan = check("POST", automations, 201, json=orphan)
    check("DELETE", one, 204, at={"webhook_uid": signed["uid"]})
    at_orphan = {"automation_uid": orphan["uid"]}
    got = check("GET", automations + "/{automation_uid}", 200, at=at_orphan)
    assert got["webhooks_deleted"] == [signed["uid"]]
    check("GET", automations, 200)
    moved = {"triggers": [_trigger(url["uid"], {"a": {"exists": True}})], "enabled": False}
    check("PATCH", automations + "/{automation_uid}", 200, at=at_orphan, json=moved)
    check("DELETE", automations + "/{automation_uid}", 204, at=at_orphan)
    by_token = {"webhook_uid": url["uid"], "token": url["secret"]}
    check("POST", "/webhooks/w/{webhook_uid}/{token}", 202, at=by_token, json=[1])

    ingress = "/webhooks/w/{webhook_uid}"
    bearer = {"Authorization": f"Bearer {hook['secret']}"}
    sent = check("POST", ingress, 202, at=at, headers=bearer, json={"action": "opened"})
    check("POST", ingress, 401, at=at, headers={}, json={})
    deliveries = one + "/deliveries"

    def started() -> Any:
        path = deliveries.format(uid=check.world.factory_uid, webhook_uid=hook["uid"])
        listed = check.world.api("GET", path).json()["deliveries"]
        found = [d for d in listed if d["delivery_id"] == sent["delivery_id"] and d["runs"]]
        return found or None

    check.eventually(started)
    check("GET", deliveries, 200, at=at, params={"limit": 1})
    record: dict[str, Any] = check("GET", deliveries + "/{delivery_id}", 200, at=at | sent)
    assert record["payload"] == {"action": "opened"}
    _replays_and_backtests(check, at | sent, automation)
    return record


def _replays_and_backtests(check: Checker, at: dict[str, str], automation: Any) -> None:
    one = WEBHOOKS + "/{webhook_uid}"
    replayed = check("POST", one + "/deliveries/{delivery_id}/replay", 201, at=at)
    assert replayed["replay_of"] == at["delivery_id"]
    since = {"since": "2020-01-01T00:00:00Z", "limit": 1}
    check("POST", one + "/deliveries/replay", 200, at=at, json=since)
    check("GET", one + "/replays", 200, at=at)
    check("POST", one + "/filter-test", 200, at=at, json={"payload": {"action": ["opened"]}})
    check("POST", "/factory/{uid}/automations/dry-run", 200, json=automation)


def _provider_connections(check: Checker) -> None:
    connections = "/provider-connections"
    one = connections + "/{connection_uid}"
    github = check("POST", connections, 201, json={"provider": "github", "bot": "octo-bot"})
    at = {"connection_uid": github["uid"]}
    check("GET", connections, 200)
    check("GET", one, 200, at=at)
    check("PATCH", one, 200, at=at, json={"name": "Acme", "bot": None})
    secret = check("POST", one + "/rotate-secret", 200, at=at)["secret"]
    signed = signing.github(secret, "issues", {"action": "opened"})
    ingress = "/webhooks/p/{connection_uid}"
    sent = check("POST", ingress, 202, at=at, headers=signed.headers, content=signed.body)
    deliveries = one + "/deliveries"

    def evaluated() -> Any:
        path = deliveries.format(connection_uid=github["uid"]) + "/" + sent["delivery_id"]
        found = check.world.api("GET", path).json()
        return found if found.get("evaluation") == "evaluated" else None

    check.eventually(evaluated)
    check("GET", deliveries, 200, at=at)
    check("GET", deliveries + "/{delivery_id}", 200, at=at | sent)
    tried = {"trigger": {"provider": "github", "event": "issue_created"}, "last": 5}
    check("POST", one + "/filter-test", 200, at=at, json=tried)
    check("DELETE", one, 204, at=at)


def _runs(check: Checker, webhook_run_id: str) -> dict[str, Any]:
    webhook_run = check("GET", RUN, 200, at={"run_id": webhook_run_id})
    assert webhook_run["artifacts"] and webhook_run["metadata"]  # documented optional fields

    config = {"name": "coder", "model_id": "gpt-5", "mcp_servers": {"x": {}}}
    created = check("POST", "/agent/runs", 200, json={"prompt": "Do it", "config": config})
    at = {"run_id": created["run_id"]}
    advance(check.world, created["run_id"], "claim", "start", session_id="s1", session_link="l")
    live: dict[str, Any] = check("GET", RUN, 200, at=at)
    assert live["agent_config"] and live["started_at"] and live["creator"]
    check("POST", "/agent/runs", 200, json={"prompt": "child", "parent_run_id": live["run_id"]})
    at_conversation = {"conversation_id": live["conversation_id"]}
    check("POST", RUN + "/followups", 200, at=at, json={"message": "more"})
    check("POST", RUN + "/interrupt", 202, at=at)
    check("POST", CONVERSATION + "/interrupt", 202, at=at_conversation)
    prepared = check(
        "POST", CONVERSATION + "/attachments/prepare", 200, at=at_conversation, json={}
    )
    attachments = [a["attachment_id"] for a in prepared["attachments"]]
    body = {"message": "see file", "attachments": attachments}
    check("POST", CONVERSATION + "/followups", 200, at=at_conversation, json=body)
    check(
        "POST",
        CONVERSATION + "/followups",
        422,
        at=at_conversation,
        json=body | {"attachments": ["att_x"]},
    )

    failed = check("POST", "/agent/runs", 200, json={"prompt": "Fail", "title": "t"})
    advance(check.world, failed["run_id"], "claim", "fail", message="no", error_code="e")
    assert "status_message" in check("GET", RUN, 200, at={"run_id": failed["run_id"]})
    check("POST", RUN + "/cancel", 400, at={"run_id": failed["run_id"]})
    queued = check("POST", "/agent/runs", 200, json={"prompt": "Stop"})
    assert check("POST", RUN + "/cancel", 200, at=queued) == queued["run_id"]
    check("GET", RUN, 404, at={"run_id": "missing"})
    params = {"state": ["INPROGRESS", "FAILED", "QUEUED"], "limit": 2}
    page = check("GET", "/agent/runs", 200, params=params)
    check("GET", "/agent/runs", 200, params={"cursor": page["page_info"]["next_cursor"]} | params)
    check("GET", "/agent/runs", 400, params={"state": "DONE"})
    return live


def _tasks(check: Checker, run: dict[str, Any]) -> None:
    body = {"title": "Task", "conversation_id": run["conversation_id"]}
    task = check("POST", TASKS, 201, json=body)
    check("POST", TASKS, 409, json=body)
    at = {"task_uid": task["uid"]}

    async def output(services: Services) -> None:
        async with services.database.transaction() as conn:
            await tasks.add_output(conn, task["uid"], "pull_request", "PR", "https://x/1")
            await tasks.add_output(conn, task["uid"], "document", None, None)

    check.world.client.run(output)
    assert len(check("GET", TASK, 200, at=at)["outputs"]) == 2
    check("PATCH", TASK, 200, at=at, json={"description": "d", "stage": "TODO"})

    dispatched = check(
        "POST",
        "/factory/{uid}/runs",
        201,
        json={"prompt": "Ship", "ticket_ref": "PROJ-1", "ticket_url": "https://t.test/PROJ-1"},
    )
    by_run = "/factory/{uid}/task-by-run"
    probe = {"run_id": dispatched["run_id"]}

    def bound() -> Any:
        answer = check.world.api("GET", by_run.format(uid=check.world.factory_uid), params=probe)
        return answer.json() if answer.status_code == 200 else None

    check.eventually(bound)
    seeded = check("GET", by_run, 200, params=probe)
    assert seeded["ticket_source"] == "issue_key" and "created_by" in seeded
    by_conversation = {"conversation_id": run["conversation_id"]}
    check("GET", "/factory/{uid}/task-by-conversation", 200, params=by_conversation)
    full = {"full_list": "true", "include_current_run": "true", "limit": 1}
    page = check("GET", TASKS, 200, params=full)
    assert page["tasks"][0]["current_run"] is not None and page["page_info"]["has_next_page"]
    check("GET", TASKS, 200, params={"stage": ["TRIAGE", "TODO"]})
    cancelled = check("POST", TASK + "/cancel", 200, at={"task_uid": seeded["uid"]})
    assert cancelled["current_run"]["state"] == "CANCELLED"
    check("GET", TASKS, 400, params={"stage": "NOPE"})
    check("DELETE", TASK, 204, at=at)
    check("GET", TASK, 404, at=at)
    check("GET", TASK, 403, at=at, headers=check.world.stranger)


def _agents_models_environments(check: Checker) -> None:
    agents, one = "/agent/identities", "/agent/identities/{uid}"
    full = {"name": "A", "description": "d", "prompt": "p", "agent_type": "CUSTOM",
            "base_model": "gpt-5", "environment_id": "default", "worker_host": "warp",
            "credential_strategy": "EXECUTOR", "factory_uid": check.world.factory_uid,
            "mcp_servers": {"m": {"url": "https://m.test"}}, "skills": ["a/b:c"]}  # fmt: skip
    created = check("POST", agents, 201, json=full)
    check("GET", agents, 200, params={"factory_uid": check.world.factory_uid})
    check("GET", one, 200, at={"uid": created["uid"]})
    check("PUT", one, 200, at={"uid": created["uid"]}, json={"description": ""})
    check("DELETE", one, 204, at={"uid": created["uid"]})
    check("DELETE", one, 409, at={"uid": check.world.agent_uid})
    check("GET", "/agent/models", 200)
    in_default = check("POST", "/agent/runs", 200, json={"prompt": "p",
                       "config": {"environment_id": "default"}})  # fmt: skip
    advance(check.world, in_default["run_id"], "start")
    listed = check("GET", "/agent/environments", 200)
    assert "last_task_created" in listed["environments"][0]


def _scorers(check: Checker) -> None:
    scorer = check("POST", "/factory/{uid}/scorers", 201, json={"name": "s", "prompt": "p"})
    check("GET", "/factory/{uid}/scorers", 200)
    dispatched = check("POST", "/factory/{uid}/runs", 201, json={"prompt": "Scored"})
    advance(check.world, dispatched["run_id"], "start")
    at = {"factory_uid": check.world.factory_uid, "scorer_uid": scorer["uid"],
          "run_id": dispatched["run_id"]}  # fmt: skip
    path = "/factory/{factory_uid}/scorers/{scorer_uid}/dispatch"
    check("POST", path, 200, at=at, json={"run_ids": [dispatched["run_id"]]})
    path = "/factory/{factory_uid}/runs/{run_id}/scorer_dispatch"
    again = check("POST", path, 200, at=at, json={"scorer_uids": [scorer["uid"]]})
    assert again["results"][0]["status"] == "already_queued"
    check("POST", path, 400, at=at, json={"scorer_uids": []})
    runner = check("POST", "/runner/register", 201, json={"name": "r"}, headers=check.world.agent)
    held = {"runner_uid": runner["runner_uid"]}
    claimed = check("POST", "/runner/scoring-jobs/claim", 200, json=held | {"max_jobs": 5},
                    headers=check.world.agent)  # fmt: skip
    job = {"job_id": claimed["jobs"][0]["job_id"]} | at
    check("POST", "/runner/scoring-jobs/{job_id}/outcome", 201, at=job,
          json=held | {"score": 0.5, "reasoning": "fine"}, headers=check.world.agent)  # fmt: skip
    one = "/factory/{uid}/scorers/{scorer_uid}"
    check("GET", one + "/results", 200, at=at, params={"include_reasons": "true"})
    check("GET", one + "/metrics", 200, at=at, params={"group_by_period": "week"})
    check("GET", "/agent/runs/{run_id}/scores", 200, at=at)
    check("PATCH", one, 200, at=at, json={"prompt": "Judge harder"})
    check("PATCH", one, 400, at=at, json={})
    check("DELETE", one, 204, at=at)
    check("DELETE", one, 404, at=at)


def _benchmarks(check: Checker) -> None:
    base = "/factory/{uid}/benchmark-suites"
    suite = check("POST", base, 201, json={"name": "b", "configurations": [{"name": "c"}]})
    at = {"suite_uid": suite["uid"]}
    one = base + "/{suite_uid}"
    check("GET", base, 200)
    check("GET", one, 200, at=at)
    check("PATCH", one, 200, at=at, json={"description": "d"})
    task = {"title": "t", "prompt": "p", "success_criteria": "s"}
    made = check("POST", one + "/tasks", 201, json=task, at=at)
    check("POST", one + "/tasks", 200, json=task, at=at)  # identical: the existing one
    at_task = at | {"task_uid": made["uid"]}
    check("GET", one + "/tasks/{task_uid}", 200, at=at_task)
    check("PATCH", one + "/tasks/{task_uid}", 200, at=at_task, json={"tags": ["x"]})
    launched = check("POST", one + "/runs", 201, at=at)
    check(
        "GET", one + "/runs", 200, at=at, params={"include": ["aggregate_results", "creator_name"]}
    )
    at_run = {"benchmark_run_uid": launched["uid"]}
    run = "/factory/{uid}/benchmark-runs/{benchmark_run_uid}"
    check("GET", run, 200, at=at_run)
    check("GET", run + "/results", 200, at=at_run, params={"include": "metrics"})
    trials = check("GET", run + "/trials", 200, at=at_run)
    at_trial = at_run | {"trial_uid": trials["data"][0]["uid"]}
    check(
        "GET",
        run + "/trials/{trial_uid}",
        200,
        at=at_trial,
        params={"include": ["results", "details"]},
    )
    check("POST", run + "/cancel", 200, at=at_run)
    check("DELETE", one + "/tasks/{task_uid}", 204, at=at_task)
    check("DELETE", one, 204, at=at)


def _inbox(check: Checker, run: dict[str, Any]) -> None:
    advance(check.world, run["run_id"], "start", "fail", message="broke")
    mine = check("GET", "/factory-inbox", 200, params={"limit": 1})
    check("GET", "/factory-inbox", 200, params={"scope": "team"}, headers=check.world.agent)
    uids = {"notification_uids": [mine["notifications"][0]["uid"], "ntf_missing"]}
    check("POST", "/factory-inbox/notifications/read", 200, json=uids)
    check("POST", "/factory-inbox/notifications/unread", 200, json=uids)
    check("POST", "/factory-inbox/notifications/read", 403, json=uids, headers=check.world.agent)
    check("GET", "/factory-inbox", 400, params={"scope": "everyone"})


def _schedules(check: Checker) -> None:
    base, one = "/agent/schedules", "/agent/schedules/{schedule_id}"
    body = {"name": "n", "cron_schedule": "0 9 * * 1-5", "prompt": "p", "metadata": {"k": "v"},
            "agent_config": {"model_id": "gpt-5"}, "agent_uid": check.world.agent_uid}  # fmt: skip
    created = check("POST", base, 201, json=body)
    at = {"schedule_id": created["id"]}
    check("GET", base, 200)
    check("GET", one, 200, at=at)
    check("PUT", one, 200, at=at, json={"name": "m", "cron_schedule": "0 * * * *",
                                        "enabled": True, "prompt": "q"})  # fmt: skip
    check("POST", one + "/pause", 200, at=at)
    check("POST", one + "/resume", 200, at=at)
    check("DELETE", one, 200, at=at)
    check("GET", one, 404, at=at)
    check("POST", base, 400, json=body | {"cron_schedule": "every day"})


def _schemas_and_attachments(check: Checker, run: dict[str, Any]) -> None:
    schemas = "/factory-files/schemas"
    check("GET", schemas, 200)
    check("GET", schemas + "/{version}", 200, at={"version": "v1alpha1"})
    document = {"version": "v1alpha1", "document": "factory.schema.json"}
    check("GET", schemas + "/{version}/{document}", 200, at=document)
    check("GET", schemas + "/{version}", 404, at={"version": "v0"})
    check("POST", RUN + "/attachments/prepare", 200, at={"run_id": run["run_id"]},
          json={"files": [{"name": "a.txt"}]})  # fmt: skip


def _factory_files(check: Checker) -> None:
    from tests.platform.factory_files.support import set_secrets
    from tests.platform.factory_files.trees import GITHUB_PUSH, automation, minimal, webhook

    set_secrets(check.world, {"hook-token": "t0ken"})
    tree = minimal(
        "documented",
        {
            "webhooks/inbox.yaml": webhook("hook-token"),
            "automations/push/automation.md": automation(GITHUB_PUSH),
        },
    )
    check("POST", "/factory-files/plan", 200, json={"files": tree})
    applied = check("POST", "/factory-files/apply", 200, json={"files": tree})
    check("GET", "/factory/{uid}/definition", 200, at={"uid": applied["factory_uid"]})
    broken = tree | {"agents/boss/agent.md": "---\nagentType: BOSS\n---\n"}
    check("POST", "/factory-files/apply", 422, json={"files": broken})


def _runner(check: Checker, webhook_run_id: str) -> None:
    agent = check.world.agent
    registered = check("POST", "/runner/register", 201, headers=agent, json={"name": "r1"})
    runner = {"runner_uid": registered["runner_uid"]}
    claim = runner | {"max_runs": 10, "wait_s": 0}
    claimed = check("POST", "/runner/claim", 200, headers=agent, json=claim)
    run_ids = [run["run_id"] for run in claimed["runs"]]
    assert webhook_run_id in run_ids
    held = "/runner/runs/{run_id}"
    at = {"run_id": webhook_run_id}
    check("POST", held + "/heartbeat", 200, headers=agent, at=at, json=runner)
    check("POST", held + "/event-payload", 200, headers=agent, at=at, json=runner)
    progress = runner | {"state": "INPROGRESS", "status_message": "working"}
    check("POST", held + "/progress", 200, headers=agent, at=at, json=progress)
    said = runner | {"messages": [{"role": "agent", "text": "hello"}]}
    check("POST", held + "/messages", 200, headers=agent, at=at, json=said)
    file = runner | {"artifact_type": "FILE", "filename": "out.bin", "content_base64": "aGk="}
    file = check("POST", held + "/artifacts", 201, headers=agent, at=at, json=file)
    pull = runner | {"artifact_type": "PULL_REQUEST", "url": "https://example.com/pr/1",
                     "branch": "fix", "title": "Fix", "state": "open"}  # fmt: skip
    check("POST", held + "/artifacts", 201, headers=agent, at=at, json=pull)
    usage = runner | {"model_id": "m", "input_tokens": 3, "output_tokens": 2,
                      "cost_usd": {"llm": 0.25}}  # fmt: skip
    check("POST", held + "/usage", 200, headers=agent, at=at, json=usage)
    done = runner | {"outcome": "SUCCEEDED", "status_message": "done", "transcript": "log"}
    check("POST", held + "/finish", 200, headers=agent, at=at, json=done)
    check("POST", held + "/finish", 409, headers=agent, at=at, json=done)
    back = [run_id for run_id in run_ids if run_id != webhook_run_id]
    if back:
        check("POST", held + "/release", 200, headers=agent, at={"run_id": back[0]}, json=runner)
    # several at once: finished ones, and a problem for the one finished above
    endings = [{"run_id": run_id, "outcome": "FAILED"} for run_id in [webhook_run_id, *back[1:]]]
    many = runner | {"runs": endings, "claim": 1}
    answer = check("POST", "/runner/finish", 200, headers=agent, json=many)
    assert answer["finished"][0]["problem"]["code"] == "lease_lost"
    one = "/agent/artifacts/{artifact_uid}"
    details = check("GET", one, 200, at={"artifact_uid": file["artifact_uid"]})
    token = details["data"]["download_url"].rsplit("/", 1)[1]
    check("GET", "/agent/artifacts/content/{token}", 200, headers={}, at={"token": token})
    at_file = {"artifact_uid": file["artifact_uid"]}
    check("GET", one + "/download", 302, at=at_file, follow_redirects=False)
    check("GET", RUN + "/transcript", 302, at=at, follow_redirects=False)
    check("GET", RUN + "/conversation", 200, at=at)
    conversation = {"conversation_id": check("GET", RUN, 200, at=at)["conversation_id"]}
    check("GET", "/agent/conversations/{conversation_id}", 200, at=conversation)
    check("GET", "/agent/conversations/{conversation_id}/transcript", 302, at=conversation,
          follow_redirects=False)  # fmt: skip
    check("GET", "/agent/run-by-reference", 200, params={"url": "https://example.com/pr/1"})
    check("GET", "/agent/skills", 200)
    check("GET", RUN + "/timeline", 200, at=at)
    handoff = check("GET", RUN + "/handoff/attachments", 200, at=at)
    assert [a["attachment_id"] for a in handoff["attachments"]] == [file["artifact_uid"]]
    conversation = {"conversation_id": "unknown"}
    check("GET", CONVERSATION + "/redirect", 200, headers={}, at=conversation)
    check("GET", "/agent/sessions/{session_uuid}/redirect", 200, headers={},
          at={"session_uuid": "unknown"})  # fmt: skip
    check("GET", RUN + "/usage", 200, at=at)
    check("GET", "/agent/workers", 200)


def _metrics(check: Checker) -> None:
    """After _runner: the webhook run (a factory run) reported a PR and usage."""
    weekly = {"group_by_period": "week"}
    metrics = check("GET", "/factory/{uid}/metrics", 200, params=weekly)
    assert metrics["pr_count"] == 1 and metrics["series"]["run_count"]
    check("GET", "/factory/{uid}/metrics", 200)
    check("GET", "/factory/{uid}/metrics", 400, params={"group_by_period": "year"})
    assert check("GET", "/factory/{uid}/costs/per-pr", 200, params=weekly)["pr_count"] == 1
    check("GET", "/factory/{uid}/costs/per-pr", 200)
    for group_by in ("source", "user", "agent", "model"):
        params = {"group_by": group_by, "group_by_period": "day"}
        assert check("GET", "/factory/{uid}/costs/breakdown", 200, params=params)["groups"]
    check("GET", "/factory/{uid}/costs/breakdown", 400)
    check("GET", "/factory/{uid}/costs/breakdown", 404, headers=check.world.stranger,
          params={"group_by": "model"})  # fmt: skip
    top = check("GET", "/factory/{uid}/costs/per-pr/top", 200, params={"limit": 5})
    assert top["prs"][0]["components"]
    check("GET", "/factory/{uid}/costs/per-pr/top", 400, params=weekly)
    check("GET", "/factory/{uid}/costs/per-pr/by-size", 200)
    check("GET", "/factory/{uid}/metrics/run-counts", 200, params={"group_by": "state"} | weekly)
    listed = check("GET", "/factory/{uid}/pull-requests", 200, params={"limit": 1})
    assert listed["pull_requests"][0]["url"] == "https://example.com/pr/1"


def test_responses_match_the_documented_schemas(world: World) -> None:
    check = Checker(world)
    record = _webhooks_and_deliveries(check)
    run = _runs(check, record["runs"][0]["run_id"])
    _tasks(check, run)
    check("GET", "/factory/{uid}", 200)
    check("GET", "/factory", 200)
    check("GET", "/openapi.json", 200)
    check("GET", "/networking/egress-ranges", 200)
    _agents_models_environments(check)
    _scorers(check)
    _benchmarks(check)
    _inbox(check, check("POST", "/factory/{uid}/runs", 201, json={"prompt": "Inbox"}))
    _schedules(check)
    _provider_connections(check)
    _schemas_and_attachments(check, run)
    _factory_files(check)
    _runner(check, record["runs"][0]["run_id"])
    _metrics(check)
    check("GET", "/healthz", 200, headers={})
    check("GET", "/readyz", 200, headers={})
    check("GET", "/metrics", 200, headers={})
    check("GET", "/agent/runs", 401, headers={})
    successes = {
        (method.upper(), path, int(status))
        for path, operations in DOCUMENT["paths"].items()
        for method, operation in operations.items()
        for status in operation["responses"]
        if status.startswith("2")
    }
    missing = sorted(successes - check.seen)
    assert not missing, f"documented success responses without a shape check: {missing}"


def test_shape_check_catches_missing_fields_wrong_types_and_extras() -> None:
    """The checker itself: a response missing a required field, with a wrong type, with a
    field the document does not name, or with a non-UTC timestamp is refused."""
    task: dict[str, Any] = {
        "uid": "task_1",
        "factory_uid": "fac_1",
        "title": "t",
        "description": None,
        "stage": "TRIAGE",
        "conversation_id": "c",
        "created_at": "2024-01-02T03:04:05.678901Z",
        "updated_at": "2024-01-02T03:04:05Z",
        "outputs": [],
    }
    path = "/api/v1/factory/{uid}/tasks/{task_uid}"

    def errors(body: dict[str, Any]) -> list[str]:
        response = httpx.Response(200, json=body)
        return shape_errors("GET", path, response)

    assert errors(task) == []
    assert errors({k: v for k, v in task.items() if k != "stage"})
    assert errors(task | {"stage": 3})
    assert errors(task | {"outputs": [{"id": "o"}]})
    assert errors(task | {"colour": "red"})
    assert errors(task | {"created_at": "2024-01-02T03:04:05+02:00"})
    assert errors(task | {"current_run": {"run_id": "r"}})
    assert shape_errors("GET", path, httpx.Response(418, json=task))


def test_the_replays_declare_the_idempotency_key_header_they_read() -> None:
    paths = openapi_document()["paths"]
    hook = "/api/v1/factory/{uid}/webhooks/{webhook_uid}"
    for path in (f"{hook}/deliveries/{{delivery_id}}/replay", f"{hook}/deliveries/replay"):
        (key,) = [p for p in paths[path]["post"]["parameters"] if p["name"] == "Idempotency-Key"]
        assert key["in"] == "header" and key["required"] is False
        assert key["schema"] == {"type": "string", "minLength": 1, "maxLength": 200}
