"""`gateway runner --checkout` clones a run's repository with the credential of the provider
connection that started it (docs/runners.md#a-working-copy), both real processes, on both
deployment shapes: a GitHub push delivered to a connection with an api_token is cloned with that
token, one delivered to a GitHub App connection with an installation token made for that
repository's contents alone (GitHub's API standing in on loopback), and a run no connection
started with the runner's own GATEWAY_CHECKOUT_TOKEN. The forge is git-http-backend behind a
server that wants the token. No token is in a run's answer, transcript, the working copy's
.git/config, the command's environment or a log."""

from __future__ import annotations

import base64
import copy
import json
import sys
import threading
from http.server import ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.connections.signing import github
from tests.providers.conftest import GithubExamples, github_examples
from tests.replies.github_api import GitHubApi
from tests.runner.test_checkout import GitOverHttp
from tests.runner.test_runner_checkout import DUMP, _done, _origin
from tests.runner.test_runner_context import _apply
from tests.runner.test_runner_e2e import SHAPES, Deployment, deployment, shape, wait_for

__all__ = ["deployment", "github_examples", "shape"]  # the fixtures, used by name
pytestmark = pytest.mark.slow  # real processes: a served gateway and a runner

PAT = "ghp_connection-pat-f0r-clone"
RUNNER_TOKEN = "runner-checkout-t0ken"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PEM = KEY.private_bytes(
    serialization.Encoding.PEM,
    serialization.PrivateFormat.TraditionalOpenSSL,
    serialization.NoEncryption(),
).decode()
TREE = {
    "factory.yaml": "schemaVersion: v1alpha1\nname: cloned\nrepositories:\n"
    "  - {owner: Codertocat, name: Hello-World}\nagentDefaults:\n  model: auto\n  runner: plain\n",
    "runners/plain.yaml": "platform:\n  linux:\n    dockerImage: ubuntu:24.04\n",
    "agents/boss/agent.md": "---\nagentType: FOREMAN\n---\nLead.\n",
    "automations/pushed/automation.md": "---\ntriggers:\n  - provider: github\n"
    "    event: push\n---\nBuild the push.\n",
}


def _basic(token: str) -> str:
    return "Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


def _connect(deployment: Deployment, **body: Any) -> dict[str, Any]:
    made = deployment.api("POST", "/provider-connections", json={"provider": "github"} | body)
    assert made.status_code == 201, made.text
    connection: dict[str, Any] = made.json()
    return connection


def _push(deployment: Deployment, connection: dict[str, Any], payload: Any) -> str:
    signed = github(connection["secret"], "push", payload)
    sent = httpx.post(connection["ingress_url"], content=signed.body, headers=signed.headers,
                      timeout=10)  # fmt: skip
    assert sent.status_code == 202, sent.text
    path = f"/provider-connections/{connection['uid']}/deliveries/{sent.json()['delivery_id']}"
    runs = wait_for(lambda: deployment.api("GET", path).json().get("runs"), what="its run")
    return str(runs[0]["run_id"])


@pytest.mark.parametrize("shape", SHAPES)
def test_a_connections_run_is_cloned_with_the_connections_credential(
    deployment: Deployment, github_examples: GithubExamples
) -> None:
    origin = _origin(deployment.tmp)
    api = GitHubApi(issues=set(), tokens={PAT, RUNNER_TOKEN})
    api.apps["4242"], api.installations["77"] = KEY.public_key(), "4242"
    GitOverHttp.root, GitOverHttp.expected = str(deployment.tmp / "git"), ""
    GitOverHttp.tokens, GitOverHttp.seen = api.tokens, []  # what it mints is taken too
    forge = ThreadingHTTPServer(("127.0.0.1", 0), GitOverHttp)
    threading.Thread(target=forge.serve_forever, daemon=True).start()
    template = f"http://127.0.0.1:{forge.server_address[1]}/{{owner}}/{{name}}.git"
    with api.serve():
        factory_uid = _apply(deployment, TREE)["factory_uid"]
        with_token = _connect(deployment, name="pat", api_token=PAT)
        with_app = _connect(
            deployment, name="app", app_id="4242", private_key=PEM, installation_id="77",
            api_base_url=api.url,
        )  # fmt: skip
        push = copy.deepcopy(
            next(p for p in github_examples["push"] if p["ref"] == "refs/heads/master")
        )
        push["after"] = origin["first"]
        runs = {
            "pat": _push(deployment, with_token, push),
            "app": _push(deployment, with_app, push),
        }
        listed = deployment.api("GET", f"/agent/identities?factory_uid={factory_uid}").json()
        boss = next(agent["uid"] for agent in listed["agents"] if agent["name"] == "boss")
        made = deployment.api(
            "POST", "/agent/runs", json={"prompt": "work", "agent_identity_uid": boss}
        )
        assert made.status_code == 200, made.text
        runs["runner"] = made.json()["run_id"]  # no connection: the factory's repository

        dump_dir = deployment.tmp / "dumps"
        script = deployment.tmp / "dump.py"
        # the working copy dumped as for the runner's token; no secrets to report here
        dumped = DUMP.replace("runner-checkout", "f0r-clone")
        script.write_text(dumped.replace('os.environ["DEPLOY_TOKEN"]', '"no secret"'))
        deployment.env["DUMP_TO"] = str(dump_dir)
        deployment.env["GATEWAY_CHECKOUT_TOKEN"] = RUNNER_TOKEN
        deployment.runner(f"{sys.executable} {script}", "--checkout", "--clone-url-template",
                          template)  # fmt: skip
        done = {name: _done(deployment, run_id) for name, run_id in runs.items()}
    forge.shutdown()
    forge.server_close()

    for name, run in done.items():
        assert run["state"] == "SUCCEEDED", (name, run)
    minted = sorted(api.tokens - {PAT, RUNNER_TOKEN})
    assert len(minted) == 1  # one installation token, for the app's run
    (exchange,) = api.calls_to(r"/app/installations/77/access_tokens")
    assert exchange.body == {"repositories": ["Hello-World"], "permissions": {"contents": "read"}}
    transcripts = {name: deployment.transcript(run_id) for name, run_id in runs.items()}
    assert "Hello-World.git, with the connection's token ---" in transcripts["pat"]
    assert "Hello-World.git, with the connection's token ---" in transcripts["app"]
    assert "Hello-World.git, with GATEWAY_CHECKOUT_TOKEN ---" in transcripts["runner"]
    # the forge was asked with each: the connection's token, the minted one, the runner's
    assert {_basic(PAT), _basic(minted[0]), _basic(RUNNER_TOKEN)} <= set(GitOverHttp.seen)
    for name, run_id in runs.items():
        dump = json.loads((dump_dir / f"{run_id}.json").read_text())
        assert dump["head"] in (origin["first"], origin["second"]), name
        assert not dump["token_in_env"], name
        for token in (PAT, *minted, RUNNER_TOKEN):
            assert token not in dump["git_config"], name
            assert token not in transcripts[name], name
            assert token not in deployment.api("GET", f"/agent/runs/{run_id}").text, name
    for log in deployment.tmp.glob("*.log"):
        text = log.read_text(errors="replace")
        for token in (PAT, *minted, RUNNER_TOKEN):
            assert token not in text, log
