"""/factory-files/schemas: the versions, a version's bundle, one document (spec 9.2), served
without a key (factory-format.md §2)."""

from __future__ import annotations

import jsonschema
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from tests.support import World

BASE = "/factory-files/schemas"
DOCUMENTS = sorted(
    [
        "factory.schema.json",
        "agent.schema.json",
        "automation.schema.json",
        "scorer.schema.json",
        "runner.schema.json",
        "webhook.schema.json",
        "benchmark_suite.schema.json",
        "benchmark_suite_task.schema.json",
        "common.schema.json",
    ]
)


def test_versions_list_their_documents(world: World) -> None:
    response = world.api("GET", BASE)
    assert response.status_code == 200
    assert response.json() == {
        "current_version": "v1alpha1",
        "versions": [
            {
                "version": "v1alpha1",
                "current": True,
                "documents": DOCUMENTS,
                "bundle_path": "/api/v1/factory-files/schemas/v1alpha1",
            }
        ],
    }


def test_each_document_is_served_and_validates_its_files(world: World) -> None:
    for name in DOCUMENTS:
        response = world.api("GET", f"{BASE}/v1alpha1/{name}")
        assert response.status_code == 200, name
        assert response.headers["content-type"] == "application/schema+json"
        schema = response.json()
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$id"] == f"/api/v1{BASE}/v1alpha1/{name}"
    # documents refer to common.schema.json by relative $ref: a client registers all of them
    fetched = [world.api("GET", f"{BASE}/v1alpha1/{name}").json() for name in DOCUMENTS]
    registry: Registry[object] = Registry().with_resources(
        (doc["$id"], DRAFT202012.create_resource(doc)) for doc in fetched
    )
    webhook = world.api("GET", f"{BASE}/v1alpha1/webhook.schema.json").json()
    validator = jsonschema.Draft202012Validator(webhook, registry=registry)
    assert validator.is_valid({"authMode": "token", "secretName": "gh"})
    assert not validator.is_valid({"prompt": "an automation is not a webhook", "triggers": []})
    by_kind = world.api("GET", f"{BASE}/v1alpha1/webhook")
    assert by_kind.status_code == 200 and by_kind.json() == webhook


def test_the_bundle_embeds_every_document_under_its_own_id(world: World) -> None:
    response = world.api("GET", f"{BASE}/v1alpha1")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/schema+json"
    bundle = response.json()
    jsonschema.Draft202012Validator.check_schema(bundle)
    assert sorted(bundle["$defs"]) == DOCUMENTS
    for name in DOCUMENTS:
        alone = world.api("GET", f"{BASE}/v1alpha1/{name}").json()
        assert bundle["$defs"][name] == alone
    # a reference into the bundle by a document's $id resolves to the embedded document
    registry: Registry[object] = Registry().with_resource(
        "urn:bundle", DRAFT202012.create_resource(bundle)
    )
    automation = {"$ref": f"/api/v1{BASE}/v1alpha1/automation.schema.json"}
    validator = jsonschema.Draft202012Validator(automation, registry=registry)
    good = {"triggers": [{"provider": "webhook", "event": "received",
                          "filter": {"webhook_ids": ["wh_1"]}}]}  # fmt: skip
    assert validator.is_valid(good) and not validator.is_valid({"prompt": "p"})


def test_unknown_versions_and_documents_and_no_key(world: World) -> None:
    for path, field in ((f"{BASE}/v9", "version"), (f"{BASE}/v9/factory.schema.json", "version"),
                        (f"{BASE}/v1alpha1/other.json", "document")):  # fmt: skip
        response = world.api("GET", path)
        assert response.status_code == 404 and response.json()["detail"].startswith(field), path
    for path in (BASE, f"{BASE}/v1alpha1", f"{BASE}/v1alpha1/factory.schema.json"):
        assert world.api("GET", path, headers={}).status_code == 200, path  # no key needed
        assert world.api("GET", path, headers=world.agent).status_code == 200, path
