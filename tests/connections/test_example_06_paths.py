"""Example 06-common-automations applied unchanged: its `docs-drift-on-push` automation
(`paths: ["api/**"]` on pushes to main of acme/api-service) fires for a push touching
`api/x.py`, not for one touching only `docs/x.md` (GitHub's path globs, docs/providers.md).
A real push payload of @octokit/webhooks-examples, signed as GitHub signs it. SQLite and
PostgreSQL."""

from __future__ import annotations

import copy
from typing import Any

from tests.connections.provider_world import connect, deliver, evaluated, runs
from tests.connections.test_provider_triggers import octokit_signed
from tests.platform.factory_files.support import (
    EXAMPLE_SECRETS,
    applied,
    example_files,
    set_secrets,
)
from tests.providers.conftest import GithubExamples
from tests.support import World


def _push(github_examples: GithubExamples, *files: str) -> Any:
    payload = copy.deepcopy(github_examples["push"][0])
    payload["ref"] = "refs/heads/main"
    payload["repository"] |= {"full_name": "acme/api-service", "name": "api-service"}
    payload["repository"]["owner"]["login"] = "acme"
    commit = copy.deepcopy(payload["commits"][0]) if payload.get("commits") else {}
    commit |= {"added": [], "removed": [], "modified": list(files)}
    payload["commits"] = [commit]
    payload["head_commit"] = commit
    return payload


def test_example_06_docs_drift_fires_for_api_files_only(
    world: World, github_examples: GithubExamples
) -> None:
    set_secrets(world, {name: "value" for name in EXAMPLE_SECRETS})
    factory_uid = applied(world, example_files("06-common-automations"))["factory_uid"]
    listed = world.api("GET", f"/factory/{factory_uid}/automations").json()["automations"]
    drift = next(a["uid"] for a in listed if a["name"] == "docs-drift-on-push")
    github = connect(world, "github")

    api = deliver(world.client, github, octokit_signed(github["secret"], "push",
                  _push(github_examples, "api/x.py"), "p-1"))  # fmt: skip
    evaluated(world, github, api)
    assert [run.automation_uid for run in runs(world.client, api)] == [drift]

    docs = deliver(world.client, github, octokit_signed(github["secret"], "push",
                   _push(github_examples, "docs/x.md"), "p-2"))  # fmt: skip
    record = evaluated(world, github, docs)
    assert runs(world.client, docs) == [], record["trace"]
