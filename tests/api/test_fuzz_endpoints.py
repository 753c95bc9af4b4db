"""Malformed input to every documented endpoint: never a 5xx, and every 4xx is problem+json.

Bodies: random JSON values, a wrong-typed value per documented field, huge strings, bytes that
are not JSON. Query strings: random values for the documented parameters and unknown ones.
Real factory, webhook and automation uids are substituted into the paths (SQLite only).
Streams (Server-Sent Events) never end when the request is fine: those are sent over a real
socket and only their head is read (status, content type; a refusal's problem in full).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.composition.app import openapi_document
from tests.conftest import make_settings
from tests.examples import examples
from tests.subscriptions.served import served
from tests.support import GatewayClient, World, scaled

DOCUMENT = openapi_document()
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]
OPERATIONS = sorted(
    (method.upper(), path, operation)
    for path, operations in DOCUMENT["paths"].items()
    for method, operation in operations.items()
)

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


def _streams(operation: dict[str, Any]) -> bool:
    ok = operation.get("responses", {}).get("200", {})
    return "text/event-stream" in ok.get("content", {})


class Fixture:
    def __init__(self, world: World, webhook: dict[str, Any], automation_uid: str) -> None:
        self.world = world
        self.http: httpx.Client | None = None  # to the app on a socket, for streams
        self.webhook = webhook
        self.automation_uid = automation_uid
        base = f"/factory/{world.factory_uid}"
        self.scorer_uid = self._create(f"{base}/scorers", {"name": "s", "prompt": "p"})
        self.agent_uid = self._create("/agent/identities", {"name": "fuzzed"})
        self.schedule_id = self._schedule()
        run = world.api("POST", f"{base}/runs", json={"prompt": "p"})
        assert run.status_code == 201, run.text
        self.run = run.json()

    def uids(self, method: str, path: str) -> dict[str, str]:
        """Uids for one request; a DELETE gets a resource of its own, so others keep theirs."""
        uids = {
            "uid": self.world.factory_uid,
            "factory_uid": self.world.factory_uid,
            "webhook_uid": self.webhook["uid"],
            "automation_uid": self.automation_uid,
            "scorer_uid": self.scorer_uid,
            "schedule_id": self.schedule_id,
            "run_id": self.run["run_id"],
            "conversation_id": self.run["conversation_id"],
            "version": "v1alpha1",
            "document": "factory.schema.json",
        }
        base = f"/factory/{self.world.factory_uid}"
        if path.startswith("/api/v1/agent/identities/"):
            uids["uid"] = self.agent_uid
        if method == "DELETE" and path.endswith("{automation_uid}"):
            body = {"name": "a", "prompt": "p", "triggers": [_trigger(self.webhook["uid"])]}
            uids["automation_uid"] = self._create(f"{base}/automations", body)
        elif method == "DELETE" and path.endswith("{webhook_uid}"):
            uids["webhook_uid"] = self._create(f"{base}/webhooks", {"name": "victim"})
        elif method == "DELETE" and path.endswith("{schedule_id}"):
            uids["schedule_id"] = self._schedule()
        elif method == "DELETE" and path.startswith("/api/v1/agent/identities/"):
            uids["uid"] = self._create("/agent/identities", {"name": "victim"})
        return uids

    def _schedule(self) -> str:
        body = {"name": "fuzzed", "cron_schedule": "0 9 * * *", "prompt": "p"}
        response = self.world.api("POST", "/agent/schedules", json=body)
        assert response.status_code == 201, response.text
        uid: str = response.json()["id"]
        return uid

    def _create(self, path: str, body: dict[str, Any]) -> str:
        response = self.world.api("POST", path, json=body)
        assert response.status_code == 201, response.text
        uid: str = response.json()["uid"]
        return uid


def _trigger(webhook_uid: str) -> dict[str, Any]:
    return {"provider": "webhook", "event": "received", "filter": {"webhook_ids": [webhook_uid]}}


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fixture]:
    directory: Path = tmp_path_factory.mktemp("fuzz")
    with GatewayClient.running(make_settings(f"sqlite:///{directory}/gw.db")) as client:
        world = World.create(client)
        base = f"/factory/{world.factory_uid}"
        webhook = world.api("POST", f"{base}/webhooks", json={"name": "fuzzed"}).json()
        automation = world.api(
            "POST",
            f"{base}/automations",
            json={"name": "a", "prompt": "p", "triggers": [_trigger(webhook["uid"])]},
        )
        assert automation.status_code == 201, automation.text
        with (
            served(client) as port,
            httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=scaled(30)) as http,
        ):
            made = Fixture(world, webhook, automation.json()["uid"])
            made.http = http
            yield made


def _body_fields(operation: dict[str, Any]) -> list[str]:
    schema = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
    target = schema.get("schema", {}).get("$ref", "")
    return sorted(SCHEMAS.get(target.rsplit("/", 1)[-1], {}).get("properties", {}))


def _bodies(operation: dict[str, Any]) -> st.SearchStrategy[bytes]:
    as_json = JSON_VALUES.map(lambda value: json.dumps(value).encode())
    not_json = st.binary(max_size=64)
    names = _body_fields(operation) or ["name"]
    field = st.sampled_from(names)
    wrong_type = st.builds(lambda k, v: json.dumps({k: v}).encode(), field, JSON_VALUES)
    huge = st.builds(
        lambda k, n: json.dumps({k: "x" * n}).encode(), field, st.integers(1000, 300_000)
    )
    return st.one_of(as_json, not_json, wrong_type, huge)


def _queries(operation: dict[str, Any]) -> st.SearchStrategy[dict[str, str]]:
    declared = [p["name"] for p in operation["parameters"] if p["in"] == "query"]
    names = st.sampled_from([*declared, "limit", "cursor", "unknown"])
    return st.dictionaries(names, TEXT, max_size=4)


def _headers(fixture: Fixture, path: str) -> dict[str, str]:
    if path.startswith("/webhooks/"):
        return {"Authorization": f"Bearer {fixture.webhook['secret']}"}
    return fixture.world.user


@pytest.mark.parametrize(
    ("method", "path", "operation"),
    [
        # a stream is read over a socket (served): `service`, out of the quick tier
        pytest.param(m, p, op, id=f"{m} {p}", marks=[pytest.mark.service] if _streams(op) else [])
        for m, p, op in OPERATIONS
    ],
)
def test_malformed_input_is_a_problem_not_a_crash(
    fixture: Fixture, method: str, path: str, operation: dict[str, Any]
) -> None:
    @settings(
        max_examples=examples(30),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(body=_bodies(operation), query=_queries(operation))
    def check(body: bytes, query: dict[str, str]) -> None:
        uids = fixture.uids(method, path)
        url = path.format(token="wht_wrong", delivery_id="dl_missing", **_defaults(path, uids))
        headers = _headers(fixture, path)
        if _streams(operation):
            response = _head_of_stream(fixture, method, url, body, query, headers)
        else:
            response = fixture.world.client.request(
                method, url, content=body, params=query, headers=headers
            )
        assert response.status_code < 500, (method, url, body[:200], query, response.text)
        if response.status_code >= 400:
            assert response.headers["content-type"] == "application/problem+json"
            problem = response.json()
            assert isinstance(problem["detail"], str) and problem["detail"]
            assert problem["status"] == response.status_code

    check()


def _head_of_stream(
    fixture: Fixture,
    method: str,
    url: str,
    body: bytes,
    query: dict[str, str],
    headers: dict[str, str],
) -> httpx.Response:
    """The answer of a stream: a refusal read in full; a stream that started, closed at once."""
    assert fixture.http is not None
    with fixture.http.stream(method, url, content=body, params=query, headers=headers) as answer:
        if answer.status_code >= 400:
            answer.read()
        else:
            assert answer.headers["content-type"].startswith("text/event-stream")
    return answer


def _defaults(path: str, uids: dict[str, str]) -> dict[str, str]:
    names = {part[1:-1] for part in path.split("/") if part.startswith("{")}
    return {name: uids.get(name, f"missing_{name}") for name in names - {"token", "delivery_id"}}
