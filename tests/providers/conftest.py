"""Real payloads: GitHub's from the npm package @octokit/webhooks-examples (installed by
scripts/npm-fixtures, never committed), the other providers' documented samples from
tests/fixtures/providers/ (sources in its README)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NPM_FIXTURES = ROOT / "scripts" / "npm-fixtures"
GITHUB_EXAMPLES = (
    ROOT / "tests/providers/npm/node_modules/@octokit/webhooks-examples/api.github.com/index.json"
)
FIXTURES = ROOT / "tests" / "fixtures" / "providers"

GithubExamples = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="session")
def github_examples() -> GithubExamples:
    """Every example payload of @octokit/webhooks-examples, by GitHub event name.

    Runs the install helper (a no-op when the pinned lock file is installed); a failed
    install fails the tests that need the examples, it never skips them."""
    done = subprocess.run(
        ["bash", str(NPM_FIXTURES)], capture_output=True, text=True, check=False, timeout=600
    )
    if done.returncode != 0 or not GITHUB_EXAMPLES.is_file():
        pytest.fail(
            f"scripts/npm-fixtures could not install @octokit/webhooks-examples "
            f"(exit {done.returncode}):\n{done.stdout}\n{done.stderr}",
            pytrace=False,
        )
    catalogue = json.loads(GITHUB_EXAMPLES.read_text())
    return {entry["name"]: entry["examples"] for entry in catalogue}


def fixture(provider: str, name: str) -> Any:
    return json.loads((FIXTURES / provider / f"{name}.json").read_text())


def fixtures(provider: str) -> dict[str, Any]:
    return {
        path.stem: json.loads(path.read_text())
        for path in sorted((FIXTURES / provider).glob("*.json"))
    }
