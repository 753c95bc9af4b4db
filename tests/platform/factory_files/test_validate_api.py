"""POST /factory-files/validate (factory-format.md §2, docs/factory-files.md#validating-without-a-
key): no key and no factory; the answer is the tree's diagnostics, the references only a team's
state resolves and the checks not run; size limits answer 413 and 422 naming the field; each
client address has a budget (429 with Retry-After), the forwarded address when the peer is a
trusted proxy. Then the public validation script's requests against a real `gateway serve`."""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.procs import free_port
from tests.conftest import make_settings
from tests.ingress.hooks import gateway_env, serve_gateway, stop_gateway
from tests.platform.factory_files.support import EXAMPLES, example_files
from tests.platform.factory_files.trees import minimal
from tests.support import GatewayClient, World

PATH = "/api/v1/factory-files/validate"
NOT_RUN = [
    *("provider_alias_resolution", "model", "environment", "secret", "runner_reference"),
    *("mcp_server", "integration", "worker_host", "entitlement"),
]
CLIENT = Path(__file__).with_name("validate_client.py")


def _posted(files: dict[str, str]) -> dict[str, Any]:
    return {"files": [{"path": path, "content": text} for path, text in files.items()]}


def test_a_valid_tree_without_a_key(world: World) -> None:
    answer = world.client.post(PATH, json=_posted(example_files("02-sdlc-issue-to-pr")))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["schema_version"] == "v1alpha1" and body["valid"] is True
    assert body["diagnostics"] == [] and body["state_dependent_checks_not_run"] == NOT_RUN
    deferred = {(d["kind"], d["value"]) for d in body["deferred_resolutions"]}
    assert ("model", "auto-genius") in deferred and ("alias", "Acme") in deferred
    first = body["deferred_resolutions"][0]
    assert set(first) >= {"kind", "value", "path", "line", "column"}


def test_problems_are_diagnostics_with_their_place(world: World) -> None:
    files = minimal("broken") | {
        "scorers/quality.md": "---\nmodel: auto\n---\nJudge.\n",
        "agents/boss/agent.md": "---\nagentType: FOREMAN\nmodel: ''\n---\nLead.\n",
    }
    answer = world.client.post(PATH, json=_posted(files))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["valid"] is False and body["deferred_resolutions"] == []
    codes = {(d["path"], d["code"]) for d in body["diagnostics"]}
    assert ("scorers/quality.md", "FF_UNSUPPORTED_PATH") in codes
    assert all(set(d) == {"path", "line", "column", "code", "message"} for d in body["diagnostics"])
    # a tree posted from the repository root: paths as the repository has them
    nested = {f"factory/{path}": text for path, text in files.items()}
    again = world.client.post(PATH, json=_posted(nested)).json()
    assert ("factory/scorers/quality.md", "FF_UNSUPPORTED_PATH") in {
        (d["path"], d["code"]) for d in again["diagnostics"]
    }


def test_limits_name_what_is_too_large(world: World) -> None:
    many = {f"runners/r{i}.yaml": "setupCommands: []\n" for i in range(257)}
    answer = world.client.post(PATH, json=_posted(many))
    assert answer.status_code == 413, answer.text
    problem = answer.json()
    assert problem["code"] == "payload_too_large" and problem["detail"].startswith("files: 257")
    assert answer.headers["content-type"] == "application/problem+json"
    big = {"factory.yaml": "name: big\n", "runners/r.yaml": "# " + "x" * (2 * 1024 * 1024)}
    answer = world.client.post(PATH, json=_posted(big))
    assert answer.status_code == 413 and answer.json()["detail"].startswith("files[1].content")
    body = {"files": [{"path": "factory.yaml", "content": "a"}, {"path": "factory.yaml",
                                                                 "content": "b"}]}  # fmt: skip
    answer = world.client.post(PATH, json=body)
    assert answer.status_code == 422 and answer.json()["detail"].startswith("files[1].path")
    huge = b'{"files": [{"path": "factory.yaml", "content": "' + b"x" * (9 << 20) + b'"}]}'
    answer = world.client.post(PATH, content=huge, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413
    answer = world.client.post(PATH, json={"files": {"factory.yaml": "name: x\n"}})
    assert answer.status_code == 400 and "files" in answer.json()["detail"]


@pytest.fixture
def budget_of_two(database_url: str) -> Iterator[GatewayClient]:
    with GatewayClient.running(make_settings(database_url, validate_rate_limit="2")) as client:
        yield client


def test_each_address_has_a_budget(budget_of_two: GatewayClient) -> None:
    tree = _posted(minimal("budget"))
    assert [budget_of_two.post(PATH, json=tree).status_code for _ in range(2)] == [200, 200]
    # the peer is no trusted proxy: what it forwards is not believed
    refused = budget_of_two.post(PATH, json=tree, headers={"X-Forwarded-For": "198.51.100.7"})
    assert refused.status_code == 429
    assert refused.json()["code"] == "validation_rate_limited"
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.headers["content-type"] == "application/problem+json"


@pytest.mark.slow  # starts `gateway serve` and the client script as processes
@pytest.mark.service
def test_the_public_validation_script_against_a_served_gateway(tmp_path: Path) -> None:
    env = gateway_env(
        database_url=f"sqlite:///{tmp_path}/gw.db",
        secret_key=base64.urlsafe_b64encode(b"k" * 32).decode(),
        evaluator="off",
        validate_rate_limit="10",
        trusted_proxies="127.0.0.1/32",
    )
    port = free_port()
    proc = serve_gateway(env, port, tmp_path / "serve.log")
    base = f"http://127.0.0.1:{port}"

    def script(directory: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(CLIENT), "--api-base", base, str(directory)],
            capture_output=True,
            text=True,
            timeout=120,
        )

    try:
        examples = sorted(p for p in EXAMPLES.iterdir() if p.is_dir())
        for example in examples:  # what warp-factory-examples' CI runs: each one valid
            done = script(example)
            assert done.returncode == 0, (example.name, done.stdout, done.stderr)
        broken = tmp_path / "broken"
        for path, text in (minimal("broken") | {"scorers/quality.md": "x\n"}).items():
            (broken / path).parent.mkdir(parents=True, exist_ok=True)
            (broken / path).write_text(text)
        done = script(broken)
        assert done.returncode == 1 and "scorers/quality.md:" in done.stdout, done.stdout
        # 8 examples and the broken tree made 9 validations: one more, then the budget is spent
        assert script(broken).returncode == 1
        spent = script(broken)
        assert spent.returncode == 2 and "429" in spent.stdout, spent.stdout
        # behind a trusted proxy, each forwarded address has a budget of its own
        import httpx

        other = httpx.post(
            base + PATH,
            json=_posted(minimal("other")),
            headers={"X-Forwarded-For": "198.51.100.7"},
            timeout=60,
        )
        assert other.status_code == 200, other.text
    finally:
        stop_gateway(proc)
