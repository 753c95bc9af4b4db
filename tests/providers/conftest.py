"""Real payloads: GitHub's from the npm package @octokit/webhooks-examples (tests/npm_packages.py,
never committed), the other providers' documented samples from
tests/fixtures/providers/ (sources in its README)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.npm_packages import node_modules

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "providers"

GithubExamples = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="session")
def github_examples() -> GithubExamples:
    """Every example payload of @octokit/webhooks-examples, by GitHub event name.

    Installs the tests' npm packages first (a no-op when the pinned lock file is installed); a
    failed install fails the tests that need the examples, it never skips them."""
    examples = node_modules() / "@octokit/webhooks-examples/api.github.com/index.json"
    catalogue = json.loads(examples.read_text())
    return {entry["name"]: entry["examples"] for entry in catalogue}


def fixture(provider: str, name: str) -> Any:
    return json.loads((FIXTURES / provider / f"{name}.json").read_text())


def fixtures(provider: str) -> dict[str, Any]:
    return {
        path.stem: json.loads(path.read_text())
        for path in sorted((FIXTURES / provider).glob("*.json"))
    }
