"""`gateway runner --checkout` against `gateway serve`, both real processes (docs/runners.md#a-
working-copy): webhook deliveries carrying GitHub's real push and pull_request payloads
(@octokit/webhooks-examples) have their repository cloned, from a local bare repository through
the URL template, at the event's commit before setup; the checkout token never reaches the
command, .git/config or the transcript. A repository that cannot be cloned fails the run as
`checkout_failed`, git's output in the transcript; an event payload that cannot be fetched
fails it as `event_payload_unavailable` rather than breaking the runner. Secret values the
command leaves in RUN_OUTPUTS are masked in the uploaded artifact as in the transcript."""

from __future__ import annotations

import copy
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.providers.conftest import GithubExamples, github_examples
from tests.runner.test_checkout import git
from tests.runner.test_runner_context import AUTOMATION, FILES, HOOK_TOKEN, SECRET, _admin, _apply
from tests.runner.test_runner_e2e import Deployment, deployment, shape, wait_for

__all__ = ["deployment", "github_examples", "shape"]  # the fixtures, used by name
pytestmark = pytest.mark.slow  # real processes: a served gateway and a runner

CHECKOUT_TOKEN = "runner-checkout-t0ken"
# the command: what the working directory holds, dumped where the test reads it
DUMP = r"""
import json, os, pathlib, subprocess, sys
def git(*args):
    return subprocess.run(["git", *args], capture_output=True, text=True).stdout.strip()
sys.stdin.read()
cwd = pathlib.Path.cwd()
dump = {
    "head": git("rev-parse", "HEAD"),
    "branch": git("branch", "--show-current"),
    "status": git("status", "--porcelain"),
    "files": sorted(p.name for p in cwd.iterdir()),
    "git_config": (cwd / ".git" / "config").read_text(),
    "token_in_env": any("runner-checkout" in v for v in os.environ.values()),
}
out = pathlib.Path(os.environ["DUMP_TO"])
out.mkdir(parents=True, exist_ok=True)
(out / (os.environ["RUN_ID"] + ".json")).write_text(json.dumps(dump))
pathlib.Path(os.environ["RUN_OUTPUTS"], "report.txt").write_text(
    "deployed with " + os.environ["DEPLOY_TOKEN"] + "\n"
)
print("checked out", dump["head"])
"""


def _origin(tmp: Path, full_name: str = "Codertocat/Hello-World") -> dict[str, str]:
    """Codertocat/Hello-World.git (the examples' repository) as a local bare repository: two
    commits on master, and a pull request's head (refs/pull/2/head) on a branch of the first."""
    bare = tmp / "git" / f"{full_name}.git"
    bare.mkdir(parents=True)
    git("init", "--quiet", "--bare", "--initial-branch=master", cwd=bare)
    work = tmp / "author" / full_name
    work.mkdir(parents=True)
    git("init", "--quiet", "--initial-branch=master", cwd=work)
    (work / "README.md").write_text("hello\n")
    git("add", "README.md", cwd=work)
    git("commit", "--quiet", "-m", "first", cwd=work)
    first = git("rev-parse", "HEAD", cwd=work)
    (work / "README.md").write_text("hello again\n")
    git("commit", "--quiet", "-am", "second", cwd=work)
    git("push", "--quiet", str(bare), "master", cwd=work)
    git("checkout", "--quiet", "-b", "changes", first, cwd=work)
    (work / "CHANGES.md").write_text("changes\n")
    git("add", "CHANGES.md", cwd=work)
    git("commit", "--quiet", "-m", "changes", cwd=work)
    head = git("rev-parse", "HEAD", cwd=work)
    git("push", "--quiet", str(bare), "changes:refs/pull/2/head", cwd=work)
    second = git("rev-parse", "master", cwd=work)
    template = f"file://{tmp}/git/{{owner}}/{{name}}.git"
    return {"first": first, "second": second, "head": head, "template": template}


def _deliver(deployment: Deployment, hook: dict[str, Any], factory_uid: str, body: Any) -> str:
    delivered = httpx.post(
        f"{deployment.url}/webhooks/w/{hook['uid']}",
        content=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {HOOK_TOKEN}"},
        timeout=10,
    )
    assert delivered.status_code == 202, delivered.text
    delivery_id = delivered.json()["delivery_id"]
    path = f"/factory/{factory_uid}/webhooks/{hook['uid']}/deliveries/{delivery_id}"
    runs = wait_for(lambda: deployment.api("GET", path).json().get("runs"), what="its run")
    return str(runs[0]["run_id"])


def _done(deployment: Deployment, run_id: str) -> dict[str, Any]:
    run: dict[str, Any] = wait_for(
        lambda: (r := deployment.run(run_id))["state"] in ("SUCCEEDED", "FAILED") and r,
        what=f"run {run_id} done",
    )
    return run


def test_a_runs_repository_is_checked_out_at_its_events_commit(
    deployment: Deployment, github_examples: GithubExamples
) -> None:
    team = deployment.keys["team_uid"]
    for name, value in (
        ("DEPLOY_TOKEN", SECRET),
        ("my-key.v2", "x-v4lue"),
        ("HOOK_TOKEN", HOOK_TOKEN),
        ("BOSS_TOKEN", "the-boss-v4lue"),
    ):
        _admin(deployment, "set-secret", "--team", team, "--name", name, "--value", value)
    (hook,) = _apply(deployment, FILES)["webhooks"]
    files = FILES | {"automations/build/automation.md": AUTOMATION.format(uid=hook["uid"])}
    factory_uid = _apply(deployment, files)["factory_uid"]
    origin = _origin(deployment.tmp)
    factorys = _origin(deployment.tmp, "acme/api")  # the factory's repository

    push = copy.deepcopy(
        next(p for p in github_examples["push"] if p["ref"] == "refs/heads/master")
    )
    push["after"] = origin["first"]  # a commit behind the branch's tip
    pull = copy.deepcopy(
        next(p for p in github_examples["pull_request"] if p["action"] == "opened")
    )
    pull["number"] = pull["pull_request"]["number"] = 2
    pull["pull_request"]["head"]["sha"] = origin["head"]
    missing = copy.deepcopy(push)
    missing["repository"]["name"] = "Nowhere"
    missing["repository"]["full_name"] = "Codertocat/Nowhere"
    purged = push | {"after": origin["head"]}
    runs = {
        name: _deliver(deployment, hook, factory_uid, body)
        for name, body in (("push", push), ("pull", pull), ("missing", missing), ("purged", purged))
    }
    assert len(set(runs.values())) == 4
    listed = deployment.api("GET", f"/agent/identities?factory_uid={factory_uid}").json()
    builder = next(agent["uid"] for agent in listed["agents"] if agent["name"] == "builder")
    made = deployment.api(  # no event: the factory's first repository, its default branch
        "POST", "/agent/runs", json={"prompt": "work", "agent_identity_uid": builder}
    )
    assert made.status_code == 200, made.text
    runs["api"] = made.json()["run_id"]
    # a payload the store no longer holds: the runner cannot fetch it
    database = deployment.env["GATEWAY_DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(database) as db:
        emptied = db.execute(
            "UPDATE deliveries SET payload = NULL WHERE delivery_id = "
            "(SELECT delivery_id FROM runs WHERE run_id = ?)",
            (runs["purged"],),
        )
        assert emptied.rowcount == 1

    dump_dir = deployment.tmp / "dumps"
    script = deployment.tmp / "dump.py"
    script.write_text(DUMP)
    deployment.env["DUMP_TO"] = str(dump_dir)
    deployment.env["GATEWAY_CHECKOUT_TOKEN"] = CHECKOUT_TOKEN
    deployment.runner(
        f"{sys.executable} {script}", "--checkout", "--clone-url-template", origin["template"]
    )

    run = _done(deployment, runs["push"])
    assert run["state"] == "SUCCEEDED", run
    dump = json.loads((dump_dir / f"{runs['push']}.json").read_text())
    assert dump["head"] == origin["first"] and dump["branch"] == "master"
    # setup ran in the working copy; the runner's own files are kept out of git's way
    assert "README.md" in dump["files"] and "setup-output.txt" in dump["files"]
    assert dump["status"] == "?? setup-output.txt"
    assert "Codertocat/Hello-World.git" in dump["git_config"]
    assert CHECKOUT_TOKEN not in dump["git_config"] and not dump["token_in_env"]
    transcript = deployment.transcript(runs["push"])
    assert f"--- checkout: github Codertocat/Hello-World at {origin['first']} from file://" in (
        transcript
    )
    assert transcript.index("--- checkout done ---") < transcript.index("# setup 1 of 2")
    # the secret the command wrote to RUN_OUTPUTS is masked in the uploaded file
    (artifact,) = [a for a in run["artifacts"] if a["data"]["filename"] == "report.txt"]
    details = deployment.api("GET", f"/agent/artifacts/{artifact['data']['artifact_uid']}").json()
    content = httpx.get(details["data"]["download_url"]).text
    assert content == "deployed with [secret DEPLOY_TOKEN]\n"

    pulled = _done(deployment, runs["pull"])
    assert pulled["state"] == "SUCCEEDED", pulled
    dump = json.loads((dump_dir / f"{runs['pull']}.json").read_text())
    assert dump["head"] == origin["head"] and dump["branch"] == "changes"
    assert "CHANGES.md" in dump["files"]

    failed = _done(deployment, runs["missing"])
    assert failed["state"] == "FAILED"
    assert failed["status_message"]["error_code"] == "checkout_failed"
    assert "checkout of github Codertocat/Nowhere" in failed["status_message"]["message"]
    text = deployment.transcript(runs["missing"])
    assert "does not appear to be a git repository" in text and "# setup" not in text
    assert not (dump_dir / f"{runs['missing']}.json").exists()

    from_factory = _done(deployment, runs["api"])
    assert from_factory["state"] == "SUCCEEDED", from_factory
    dump = json.loads((dump_dir / f"{runs['api']}.json").read_text())
    assert dump["head"] == factorys["second"] and "acme/api.git" in dump["git_config"]
    assert dump["branch"] == ""  # the default branch (HEAD), detached

    unavailable = _done(deployment, runs["purged"])
    assert unavailable["state"] == "FAILED"
    assert unavailable["status_message"]["error_code"] == "event_payload_unavailable"
    assert "could not be fetched" in unavailable["status_message"]["message"]
    for each in [*runs.values()]:
        assert CHECKOUT_TOKEN not in deployment.transcript(each)
    for log in deployment.tmp.glob("*.log"):
        text = log.read_text(errors="replace")
        assert CHECKOUT_TOKEN not in text and SECRET not in text, log
        assert "Traceback" not in text, log
