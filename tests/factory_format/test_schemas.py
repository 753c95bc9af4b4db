"""The JSON Schema documents: valid 2020-12, resolving their relative references, and each
example file valid against its document."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from factory_format import CURRENT_VERSION, FileKind, schema_bundle, schema_document
from factory_format.diagnostics import Diagnostics
from factory_format.documents import load_document
from factory_format.schemas import DOCUMENTS, SCHEMAS_PATH, document_of, schema_versions
from factory_format.sources import collect_sources
from tests.factory_format.support import EXAMPLE_NAMES, example_files


def registry() -> Registry[Any]:
    documents = [schema_document(CURRENT_VERSION, name) for name in DOCUMENTS]
    return Registry().with_resources(
        (d["$id"], DRAFT202012.create_resource(d)) for d in documents if d is not None
    )


@pytest.mark.parametrize("name", DOCUMENTS)
def test_each_document_is_a_2020_12_schema(name: str) -> None:
    document = schema_document(CURRENT_VERSION, name)
    assert document is not None
    Draft202012Validator.check_schema(document)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert document["$id"] == f"{SCHEMAS_PATH}/{CURRENT_VERSION}/{name}"
    assert schema_document(CURRENT_VERSION, name.removesuffix(".schema.json")) == document


def example_documents() -> list[tuple[str, str, FileKind, Any]]:
    """(example, path, kind, value) of every example file that has a schema."""
    found = []
    for example in EXAMPLE_NAMES:
        sink = Diagnostics()
        sources = collect_sources(example_files(example), sink)
        assert sources is not None
        for source in sources:
            doc = load_document(source, sink)
            if doc is not None and document_of(doc.kind) is not None:
                found.append((example, source.path, doc.kind, doc.value))
        assert len(sink) == 0
    return found


def test_every_example_file_validates_against_its_document() -> None:
    checked: set[FileKind] = set()
    for example, path, kind, value in example_documents():
        name = document_of(kind)
        schema = {"$ref": f"{SCHEMAS_PATH}/{CURRENT_VERSION}/{name}"}
        errors = list(Draft202012Validator(schema, registry=registry()).iter_errors(value))
        assert errors == [], (example, path, errors[0].message if errors else "")
        checked.add(kind)
    assert checked == {
        FileKind.FACTORY,
        FileKind.AGENT,
        FileKind.AUTOMATION,
        FileKind.RUNNER,
        FileKind.SCORER,
    }


def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(
        {"$ref": f"{SCHEMAS_PATH}/{CURRENT_VERSION}/{name}"}, registry=registry()
    )


def test_documents_written_by_the_docs_validate_too() -> None:
    webhook = validator("webhook.schema.json")
    assert webhook.is_valid(
        {"authMode": "signature", "signatureScheme": "vercel", "secretName": "s", "enabled": False}
    )
    assert not webhook.is_valid(
        {"authMode": "token", "signatureScheme": "stripe", "secretName": "s"}
    )
    suite = validator("benchmark_suite.schema.json")
    assert suite.is_valid({"name": "Smoke", "agent": "boss", "tasks": ["login"]})
    task = validator("benchmark_suite_task.schema.json")
    assert task.is_valid(
        {
            "title": "t",
            "prompt": "p",
            "successCriteria": "c",
            "startingRepoRefs": ["gitlab.com:group/sub/project@" + "0" * 40],
        }
    )
    factory = validator("factory.schema.json")
    assert not factory.is_valid(
        {
            "name": "x",
            "repositories": [{"owner": "a", "name": "b"}],
            "agentDefaults": {"model": "auto"},
        }
    )


def test_the_bundle_embeds_every_document_under_its_own_id() -> None:
    bundle = schema_bundle(CURRENT_VERSION)
    assert bundle is not None
    Draft202012Validator.check_schema(bundle)
    assert sorted(bundle["$defs"]) == sorted(DOCUMENTS)
    alone = Registry().with_resource("urn:bundle", DRAFT202012.create_resource(bundle))
    runner = Draft202012Validator(
        {"$ref": f"{SCHEMAS_PATH}/{CURRENT_VERSION}/runner.schema.json"}, registry=alone
    )
    assert runner.is_valid({"platform": {"linux": {"dockerImage": "u"}}})
    assert not runner.is_valid({"platform": {"os": "windows"}})


def test_versions_and_unknown_names() -> None:
    assert schema_versions() == [
        {
            "version": "v1alpha1",
            "current": True,
            "documents": sorted(DOCUMENTS),
            "bundle_path": "/api/v1/factory-files/schemas/v1alpha1",
        }
    ]
    assert schema_document("v9", "factory.schema.json") is None
    assert schema_document(CURRENT_VERSION, "other.json") is None
    assert schema_bundle("v9") is None


def test_served_documents_are_copies() -> None:
    first = schema_document(CURRENT_VERSION, "factory.schema.json")
    assert first is not None
    first["title"] = "changed"
    again = schema_document(CURRENT_VERSION, "factory.schema.json")
    assert again is not None and again["title"] != "changed"
