"""What `gateway runner` hands the command (docs/runners.md#what-the-command-gets), against
`gateway serve`, both real processes: a factory tree with two agents (their own prompts, models,
skills and secrets), a runner file with setup commands and an automation bound to the second
agent; a webhook delivery's run gets that agent's prompt, model, skills, MCP servers and secret
values (not the other agent's), finds its setup's output in its working directory, and its
RUN_CONTEXT is valid against the schema the API serves; a run of the first agent gets that
one's; the secrets' values are in no API answer, transcript or log. A failing
setup command fails the run as setup_failed."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx
import jsonschema
import pytest

from tests.runner.test_runner_e2e import SHAPES, Deployment, deployment, shape, wait_for

__all__ = ["deployment", "shape"]  # the fixtures, used by name
pytestmark = pytest.mark.slow  # real processes: a served gateway and a runner

SECRET = "s3cr3t-deploy-value"
BOSS_SECRET = "b0ss-only-value"
DOTTED = "dotted-v4lue"
HOOK_TOKEN = "h00k-t0ken"

FACTORY = """\
schemaVersion: v1alpha1
name: context-factory
repositories:
  - owner: acme
    name: api
secrets: [HOOK_TOKEN]
mcpServers:
  tracker:
    warpId: mcp-123
agentDefaults:
  model: auto
  runner: prepared
"""
FILES = {
    "factory.yaml": FACTORY,
    "runners/prepared.yaml": "setupCommands:\n  - echo prepared-by-setup > setup-output.txt\n"
    "  - echo setup says hello\nplatform:\n  linux:\n    dockerImage: ubuntu:24.04\n",
    "runners/broken.yaml": "setupCommands:\n  - echo about to fail; exit 3\n"
    "  - echo never here > never.txt\nplatform:\n  linux:\n    dockerImage: ubuntu:24.04\n",
    "agents/boss/agent.md": "---\nagentType: FOREMAN\nsecrets: [BOSS_TOKEN]\n---\n"
    "You lead. Foreman prompt.\n",
    "agents/boss/skills/leading/SKILL.md": "---\nname: leading\ndescription: How we lead\n"
    "---\nDelegate.\n",
    "agents/builder/agent.md": "---\nagentType: IMPLEMENT\nmodel: auto-genius\n"
    "secrets: [DEPLOY_TOKEN, my-key.v2]\n---\nYou build things. Builder prompt.\n",
    "agents/builder/skills/testing/SKILL.md": "---\nname: testing\ndescription: How we test\n"
    "---\nRun the tests first.\n",
    "agents/broken/agent.md": "---\nrunner: broken\n---\nNever gets far.\n",
    "skills/conventions/SKILL.md": "---\nname: conventions\ndescription: House style\n---\n"
    "Write small commits.\n",
    # a skill's other files travel with it
    "skills/conventions/scripts/lint.sh": "#!/bin/sh\necho linted\n",
    "agents/builder/skills/testing/reference/matrix.md": "| os | python |\n",
    "webhooks/inbox.yaml": "authMode: token\nsecretName: HOOK_TOKEN\n",
}
AUTOMATION = (
    "---\nagent: builder\ntriggers:\n  - provider: webhook\n    event: received\n"
    "    filter:\n      webhook_ids: [{uid}]\n---\nBuild what the event asks.\n"
)
# the command: everything it was given, dumped where the test reads it
DUMP = r"""
import json, os, pathlib, sys
out = pathlib.Path(os.environ["DUMP_TO"])
SHOWN = ("RUN_", "DEPLOY", "my_", "HOOK", "BOSS")
stdin = sys.stdin.read()
skills = {
    str(p.relative_to(os.environ["RUN_SKILLS"])): p.read_text()
    for p in pathlib.Path(os.environ["RUN_SKILLS"]).rglob("*") if p.is_file()
}
lint = pathlib.Path(os.environ["RUN_SKILLS"], "conventions", "scripts", "lint.sh")
skills["lint runs"] = os.access(lint, os.X_OK)
setup = pathlib.Path.cwd() / "setup-output.txt"
dump = {
    "stdin": stdin,
    "env": {k: v for k, v in os.environ.items() if k.startswith(SHOWN)},
    "context": json.loads(pathlib.Path(os.environ["RUN_CONTEXT"]).read_text()),
    "mcp": json.loads(pathlib.Path(os.environ["RUN_MCP_CONFIG"]).read_text()),
    "skills": skills,
    "setup_output": setup.read_text() if setup.exists() else None,
}
out.mkdir(parents=True, exist_ok=True)
(out / (os.environ["RUN_ID"] + ".json")).write_text(json.dumps(dump))
print("the secret is", os.environ.get("DEPLOY_TOKEN"))
print("done with", os.environ.get("RUN_AGENT"))
"""


def _admin(deployment: Deployment, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "gateway", "admin", *args],
        env=deployment.env,
        capture_output=True,
        check=True,
    )


def _apply(deployment: Deployment, files: dict[str, str]) -> dict[str, Any]:
    answer = deployment.api("POST", "/factory-files/apply", json={"files": files})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_the_command_gets_its_agents_prompt_model_skills_secrets_and_setup(
    deployment: Deployment,
) -> None:
    team = deployment.keys["team_uid"]
    for name, value in (
        ("DEPLOY_TOKEN", SECRET),
        ("my-key.v2", DOTTED),
        ("HOOK_TOKEN", HOOK_TOKEN),
        ("BOSS_TOKEN", BOSS_SECRET),
    ):
        _admin(deployment, "set-secret", "--team", team, "--name", name, "--value", value)
    (hook,) = _apply(deployment, FILES)["webhooks"]
    files = FILES | {"automations/build/automation.md": AUTOMATION.format(uid=hook["uid"])}
    factory_uid = _apply(deployment, files)["factory_uid"]
    listed = deployment.api("GET", f"/agent/identities?factory_uid={factory_uid}").json()
    agents = {agent["name"]: agent["uid"] for agent in listed["agents"]}

    dump_dir = deployment.tmp / "dumps"
    script = deployment.tmp / "dump.py"
    script.write_text(DUMP)
    deployment.env["DUMP_TO"] = str(dump_dir)
    deployment.runner(f"{sys.executable} {script}")

    delivered = httpx.post(
        f"{deployment.url}/webhooks/w/{hook['uid']}",
        content=b'{"action": "build"}',
        headers={"Authorization": f"Bearer {HOOK_TOKEN}"},
        timeout=10,
    )
    assert delivered.status_code == 202, delivered.text
    runs_path = f"/factory/{factory_uid}/webhooks/{hook['uid']}/deliveries/"
    record = wait_for(
        lambda: (
            deployment.api("GET", runs_path + delivered.json()["delivery_id"]).json().get("runs")
        ),
        what="the delivery's run",
    )
    run_id = record[0]["run_id"]
    run = wait_for(
        lambda: (r := deployment.run(run_id))["state"] in ("SUCCEEDED", "FAILED") and r,
        what="the run done",
    )
    assert run["state"] == "SUCCEEDED", run
    dump = json.loads((dump_dir / f"{run_id}.json").read_text())

    # stdin: the agent's base prompt, the skills, then the automation's prompt and envelope
    stdin = dump["stdin"]
    base = stdin.index("You build things. Builder prompt.")
    skills_at = stdin.index("--- skills ---")
    task = stdin.index("Build what the event asks.")
    assert base < skills_at < task and "Foreman prompt" not in stdin
    assert "- conventions: House style (" in stdin and "- testing: How we test (" in stdin
    env = dump["env"]
    assert env["RUN_AGENT"] == "builder" and env["RUN_MODEL"] == "auto-genius"
    assert "RUN_HARNESS" not in env  # oz, the built-in harness
    assert env["DEPLOY_TOKEN"] == SECRET and env["my_key_v2"] == DOTTED
    assert "HOOK_TOKEN" in env  # factory-wide secrets apply to every agent
    assert "BOSS_TOKEN" not in env  # the other agent's own secret is not this one's
    assert dump["skills"] == {
        "conventions/SKILL.md": '---\nname: "conventions"\ndescription: "House style"\n---\n'
        "Write small commits.\n",
        "testing/SKILL.md": '---\nname: "testing"\ndescription: "How we test"\n---\n'
        "Run the tests first.\n",
        "conventions/scripts/lint.sh": "#!/bin/sh\necho linted\n",
        "testing/reference/matrix.md": "| os | python |\n",
        "lint runs": True,
    }
    assert dump["mcp"] == {"mcpServers": {"tracker": {"warp_id": "mcp-123"}}}
    assert dump["setup_output"] == "prepared-by-setup\n"  # setup ran first, in the working dir

    context = dump["context"]
    schema = deployment.api("GET", "/runner/context-schema")
    assert schema.status_code == 200 and schema.headers["content-type"].startswith(
        "application/schema+json"
    )
    jsonschema.validate(context, schema.json())
    assert context["run"]["run_id"] == run_id and context["run"]["source"] == "WEBHOOK"
    assert context["config"]["agent"] == {
        "uid": agents["builder"],
        "name": "builder",
        "type": "IMPLEMENT",
    }
    assert {"name": "my-key.v2", "env": "my_key_v2"} in context["secrets"]
    assert context["config"]["repositories"] == [
        {"provider": "github", "owner": "acme", "name": "api"}
    ]
    assert SECRET not in json.dumps(context)

    # the value is masked in the transcript and the status message, and in no answer or log
    transcript = deployment.transcript(run_id)
    assert "setup says hello" in transcript and "the secret is [secret DEPLOY_TOKEN]" in transcript
    assert SECRET not in transcript
    assert run["status_message"]["message"] == "done with builder"
    for path in (f"/agent/runs/{run_id}", "/agent/runs", f"/agent/runs/{run_id}/timeline"):
        assert SECRET not in deployment.api("GET", path).text
    for log in deployment.tmp.glob("*.log"):
        assert SECRET not in log.read_text(errors="replace"), log

    # the other agent, named by a caller: its own prompt, model, skills and secret
    led = deployment.api(
        "POST", "/agent/runs", json={"prompt": "Lead.", "agent_identity_uid": agents["boss"]}
    )
    led_id = led.json()["run_id"]
    led_run = wait_for(
        lambda: (r := deployment.run(led_id))["state"] in ("SUCCEEDED", "FAILED") and r,
        what="the boss's run done",
    )
    assert led_run["state"] == "SUCCEEDED", led_run
    boss = json.loads((dump_dir / f"{led_id}.json").read_text())
    assert "You lead. Foreman prompt." in boss["stdin"] and "Builder prompt" not in boss["stdin"]
    assert boss["env"]["RUN_AGENT"] == "boss" and boss["env"]["RUN_MODEL"] == "auto"
    assert boss["env"]["BOSS_TOKEN"] == BOSS_SECRET and "DEPLOY_TOKEN" not in boss["env"]
    assert sorted(boss["skills"]) == [
        "conventions/SKILL.md", "conventions/scripts/lint.sh", "leading/SKILL.md", "lint runs"
    ]  # fmt: skip
    assert boss["setup_output"] == "prepared-by-setup\n"  # agentDefaults' runner: the same
    for path in (f"/agent/runs/{led_id}", "/agent/runs"):
        assert BOSS_SECRET not in deployment.api("GET", path).text
    assert BOSS_SECRET not in deployment.transcript(led_id)

    # a setup command that fails ends the run FAILED, its output in the transcript
    broken = deployment.api(
        "POST", "/agent/runs", json={"prompt": "try", "agent_identity_uid": agents["broken"]}
    )
    broken_id = broken.json()["run_id"]
    failed = wait_for(
        lambda: (r := deployment.run(broken_id))["state"] in ("SUCCEEDED", "FAILED") and r,
        what="the broken run done",
    )
    assert failed["state"] == "FAILED"
    assert failed["status_message"]["error_code"] == "setup_failed"
    assert "setup command 1 of 2 failed (exit 3)" in failed["status_message"]["message"]
    text = deployment.transcript(broken_id)
    assert "about to fail" in text and "never here" not in text
    assert not (dump_dir / f"{broken_id}.json").exists()  # the command never ran
    for log in deployment.tmp.glob("*.log"):  # neither secret, after every run
        text = log.read_text(errors="replace")
        assert SECRET not in text and BOSS_SECRET not in text, log


CLAUDE_KEY = "sk-ant-f1le-harness-key"
CODEX_KEY = "sk-codex-f1le-harness-key"
# the command: the harness key variables, then the key printed (the transcript masks it)
KEYS = r"""
import json, os, pathlib, sys
sys.stdin.read()
names = ("ANTHROPIC_API_KEY", "CODEX_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "claude_key")
dump = {
    "env": {k: os.environ[k] for k in names if k in os.environ},
    "context": json.loads(pathlib.Path(os.environ["RUN_CONTEXT"]).read_text()),
}
out = pathlib.Path(os.environ["DUMP_TO"])
out.mkdir(parents=True, exist_ok=True)
(out / (os.environ["RUN_ID"] + ".json")).write_text(json.dumps(dump))
print("key", os.environ.get("CODEX_API_KEY") or os.environ.get("ANTHROPIC_API_KEY"))
"""
HARNESS_FILES = {
    "factory.yaml": "schemaVersion: v1alpha1\nname: harness-keys\nrepositories:\n"
    "  - {owner: acme, name: api}\nagentDefaults:\n  model: auto\n  runner: plain\n",
    "runners/plain.yaml": "platform:\n  linux:\n    dockerImage: ubuntu:24.04\n",
    "agents/boss/agent.md": "---\nagentType: FOREMAN\n---\nLead.\n",
    "agents/implementer/agent.md": "---\nharness:\n  type: claude\n  model: opus\n  auth:\n"
    "    source: managedSecret\n    secretName: claude-key\n---\nImplement.\n",
    "agents/reviewer/agent.md": "---\nharness:\n  type: codex\n  model: gpt-5.3-codex\n"
    "  auth:\n    source: managedSecret\n    secretName: OPENAI_KEY\n---\nReview.\n",
}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_harness_key_named_by_auth_secret_name_reaches_the_harness_variables(
    deployment: Deployment,
) -> None:
    team = deployment.keys["team_uid"]
    for name, value in (("claude-key", CLAUDE_KEY), ("OPENAI_KEY", CODEX_KEY)):
        _admin(deployment, "set-secret", "--team", team, "--name", name, "--value", value)
    factory_uid = _apply(deployment, HARNESS_FILES)["factory_uid"]
    listed = deployment.api("GET", f"/agent/identities?factory_uid={factory_uid}").json()
    agents = {agent["name"]: agent["uid"] for agent in listed["agents"]}
    dump_dir = deployment.tmp / "dumps"
    script = deployment.tmp / "keys.py"
    script.write_text(KEYS)
    deployment.env["DUMP_TO"] = str(dump_dir)
    deployment.env["ANTHROPIC_API_KEY"] = "the-runners-own-key"  # the run's managed key wins
    deployment.runner(f"{sys.executable} {script}")
    made = {
        name: deployment.api(
            "POST", "/agent/runs", json={"prompt": "go", "agent_identity_uid": agents[name]}
        ).json()["run_id"]
        for name in ("implementer", "reviewer")
    }
    done = {
        name: wait_for(
            lambda run_id=run_id: (
                (r := deployment.run(run_id))["state"] in ("SUCCEEDED", "FAILED") and r
            ),
            what=f"the {name}'s run done",
        )
        for name, run_id in made.items()
    }
    assert all(run["state"] == "SUCCEEDED" for run in done.values()), done
    claude = json.loads((dump_dir / f"{made['implementer']}.json").read_text())
    # the harness's own variable, not a variable of the secret's name (not one of `secrets`)
    assert claude["env"] == {"ANTHROPIC_API_KEY": CLAUDE_KEY}
    assert {"name": "claude-key", "env": "ANTHROPIC_API_KEY"} in claude["context"]["secrets"]
    codex = json.loads((dump_dir / f"{made['reviewer']}.json").read_text())
    assert codex["env"] == {
        "ANTHROPIC_API_KEY": "the-runners-own-key",  # not this harness's: left as it was
        "CODEX_API_KEY": CODEX_KEY,
        "OPENAI_API_KEY": CODEX_KEY,
    }
    # the run shows where the key comes from, never the key
    shown = done["implementer"]["agent_config"]["harness"]
    assert shown["auth"] == {"source": "managedSecret", "secret_name": "claude-key"}
    assert done["implementer"]["status_message"]["message"] == "key [secret claude-key]"
    assert done["reviewer"]["status_message"]["message"] == "key [secret OPENAI_KEY]"
    for name, run_id in made.items():
        transcript = deployment.transcript(run_id)
        assert CLAUDE_KEY not in transcript and CODEX_KEY not in transcript, name
        for path in (f"/agent/runs/{run_id}", "/agent/runs", f"/agent/runs/{run_id}/timeline"):
            text = deployment.api("GET", path).text
            assert CLAUDE_KEY not in text and CODEX_KEY not in text, path
    for log in deployment.tmp.glob("*.log"):
        text = log.read_text(errors="replace")
        assert CLAUDE_KEY not in text and CODEX_KEY not in text, log
