"""The recipes of docs/runners.md#wiring-an-agent-cli, read from that page and run as the command
of a real `gateway runner` against `gateway serve`: each calls a stand-in of its CLI (`claude`,
`codex`, `gemini`, `aider`) that fails the run unless it is called exactly as the CLI's public
documentation says (prompt on stdin or in the message file, model flag, MCP configuration in
the CLI's own format, API key in its variable)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.runner.test_runner_context import _admin, _apply
from tests.runner.test_runner_e2e import Deployment, deployment, shape, wait_for

__all__ = ["deployment", "shape"]  # the fixtures, used by name
pytestmark = pytest.mark.slow  # real processes: a served gateway and a runner

DOCS = Path(__file__).resolve().parents[2] / "docs" / "runners.md"
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-t3st", "CODEX_API_KEY": "sk-c0dex", "GEMINI_API_KEY": "g3m"}
PROMPT = "Fix the failing test in the parser."
BASE = "You write careful code."

FILES = {
    "factory.yaml": "schemaVersion: v1alpha1\nname: recipes\nrepositories:\n"
    "  - owner: acme\n    name: api\nagentDefaults:\n  model: auto\n  runner: plain\n",
    "runners/plain.yaml": "platform:\n  linux:\n    dockerImage: ubuntu:24.04\n",
    "agents/boss/agent.md": "---\nagentType: FOREMAN\n---\nLead.\n",
    "agents/claude-coder/agent.md": "---\nharness:\n  type: claude\n  model: opus\n"
    f"secrets: [ANTHROPIC_API_KEY]\n---\n{BASE}\n",
    "agents/codex-coder/agent.md": "---\nharness:\n  type: codex\n  model: gpt-5-codex\n"
    f"secrets: [CODEX_API_KEY]\n---\n{BASE}\n",
    "agents/gemini-coder/agent.md": "---\nharness:\n  type: gemini\n  model: gemini-2.5-pro\n"
    f"secrets: [GEMINI_API_KEY]\n---\n{BASE}\n",
    "agents/aider-coder/agent.md": "---\nharness:\n  type: claude\n  model: sonnet\n"
    f"secrets: [ANTHROPIC_API_KEY]\n---\n{BASE}\n",
    "agents/oz-coder/agent.md": f"---\nsecrets: [ANTHROPIC_API_KEY]\n---\n{BASE}\n",
}
# the run's MCP servers as a request gives them: one each CLI starts, one it reaches, and a
# Warp server (warp_id) none of them knows
MCP = {
    "files": {"command": "npx", "args": ["-y", "files-mcp"], "env": {"ROOT": "/srv"}},
    "remote tracker": {"url": "https://mcp.example.com/mcp", "headers": {"X-Team": "acme"}},
    "warp": {"warp_id": "mcp-123"},
}

# The stand-ins: each checks its call against the CLI's documented interface and says what is
# wrong (its last line, the run's status message) with a non-zero exit.
COMMON = """
import json, os, sys, tomllib
expect = json.loads(os.environ["STAND_IN_EXPECT"])
problems = []
def check(what, got, want):
    if got != want:
        problems.append(f"{what}: got {got!r}, want {want!r}")
def finish(name, prompt):
    if expect["prompt"] not in prompt or expect["base"] not in prompt:
        problems.append(f"the prompt lacks the task or the agent's prompt: {prompt[:200]!r}")
    check("the API key", os.environ.get(expect["key"]), expect["key_value"])
    if problems:
        print("; ".join(problems))
        sys.exit(3)
    print(f"{name} called as documented")
args = sys.argv[1:]
"""
STAND_INS = {
    "claude": """
model = ["--model", expect["model"]] if expect["model"] else []
config = args[args.index("--mcp-config") + 1] if "--mcp-config" in args else ""
check("arguments", args, ["-p", *model, "--mcp-config", config, "--permission-mode", "acceptEdits"])
if config:
    check("--mcp-config", json.load(open(config)), expect["mcp"])
finish("claude", sys.stdin.read())
""",
    "codex": """
check("arguments", args[:4], ["exec", "--sandbox", "workspace-write", "--skip-git-repo-check"])
rest = args[4:]
if rest[:1] == ["--model"]:
    check("--model", rest[1], expect["model"])
    rest = rest[2:]
else:
    check("--model", None, expect["model"])
check("the prompt from stdin", rest[-1:], ["-"])
overrides = {}
for flag, value in zip(rest[:-1:2], rest[1:-1:2]):
    check("an override flag", flag, "-c")
    key, _, toml = value.partition("=")
    overrides[key] = tomllib.loads("v = " + toml)["v"]  # each value is TOML
check("-c overrides", overrides, expect["mcp"])
finish("codex", sys.stdin.read())
""",
    "gemini": """
check("arguments", args, ["--model", expect["model"], "--yolo"])
check("stdin piped", sys.stdin.isatty(), False)
settings = os.environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH", "")
check("settings", json.load(open(settings)) if settings else None, expect["mcp"])
finish("gemini", sys.stdin.read())
""",
    "aider": """
message = args[-1] if len(args) > 1 else ""
check("arguments", args, ["--model", expect["model"], "--yes-always", "--message-file", message])
finish("aider", open(message).read() if message else "")
""",
}
EXPECTED_MCP = {
    "claude": {
        "mcpServers": {
            "files": MCP["files"],
            "remote tracker": {
                "type": "http",
                "url": "https://mcp.example.com/mcp",
                "headers": {"X-Team": "acme"},
            },
        }
    },
    "codex": {
        "mcp_servers.files.command": "npx",
        "mcp_servers.files.args": ["-y", "files-mcp"],
        "mcp_servers.files.env": {"ROOT": "/srv"},
        'mcp_servers."remote tracker".url': "https://mcp.example.com/mcp",
        'mcp_servers."remote tracker".http_headers': {"X-Team": "acme"},
    },
    "gemini": {
        "mcpServers": {
            "files": MCP["files"],
            "remote tracker": {
                "httpUrl": "https://mcp.example.com/mcp",
                "headers": {"X-Team": "acme"},
            },
        }
    },
    "aider": None,
}


def recipes() -> dict[str, str]:
    """Each recipe of the page: its script by its name."""
    text = DOCS.read_text()
    found = re.findall(r"<!-- recipe: (\S+) -->\n```\w+\n(.*?)```", text, re.DOTALL)
    return dict(found)


def test_the_page_has_a_recipe_per_cli() -> None:
    assert set(recipes()) == {"gateway-claude", "gateway-codex", "gateway-gemini", "gateway-aider"}


@pytest.fixture
def wired(deployment: Deployment) -> dict[str, str]:
    """The tree applied, the keys set, the recipes and stand-ins on the runners' PATH: the
    agents' uids by name."""
    team = deployment.keys["team_uid"]
    for name, value in KEYS.items():
        _admin(deployment, "set-secret", "--team", team, "--name", name, "--value", value)
    factory_uid = _apply(deployment, FILES)["factory_uid"]
    bin_dir = deployment.tmp / "bin"
    bin_dir.mkdir()
    for name, script in recipes().items():
        (bin_dir / name).write_text(script)
        (bin_dir / name).chmod(0o755)
    for name, body in STAND_INS.items():
        (bin_dir / name).write_text(f"#!{sys.executable}\n{COMMON}\n{body}")
        (bin_dir / name).chmod(0o755)
    deployment.env["PATH"] = f"{bin_dir}:{deployment.env['PATH']}"
    listed = deployment.api("GET", f"/agent/identities?factory_uid={factory_uid}").json()
    return {agent["name"]: agent["uid"] for agent in listed["agents"]}


def _run(deployment: Deployment, agent_uid: str, cli: str, model: str | None) -> dict[str, Any]:
    """A run of the agent executed by the recipe of `cli`, its stand-in expecting `model`."""
    key = "CODEX_API_KEY" if cli == "codex" else "GEMINI_API_KEY" if cli == "gemini" else None
    key = key or "ANTHROPIC_API_KEY"
    expect = {"model": model, "mcp": EXPECTED_MCP[cli], "prompt": PROMPT, "base": BASE,
              "key": key, "key_value": KEYS[key]}  # fmt: skip
    deployment.env["STAND_IN_EXPECT"] = json.dumps(expect)
    runner = deployment.runner(f"gateway-{cli}", name=cli)
    try:
        made = deployment.api(
            "POST",
            "/agent/runs",
            json={
                "prompt": PROMPT,
                "agent_identity_uid": agent_uid,
                "config": {"mcp_servers": MCP},
            },
        )
        assert made.status_code == 200, made.text
        run_id = made.json()["run_id"]
        run: dict[str, Any] = wait_for(
            lambda: (r := deployment.run(run_id))["state"] in ("SUCCEEDED", "FAILED") and r,
            what=f"the {cli} run done",
        )
    finally:
        runner.terminate()
        runner.wait(30)
    run["transcript"] = deployment.transcript(run_id)
    return run


CASES = [
    ("claude", "claude-coder", "opus"),
    ("claude", "oz-coder", None),  # an oz model id (auto) is not Claude's: none passed
    ("codex", "codex-coder", "gpt-5-codex"),
    ("gemini", "gemini-coder", "gemini-2.5-pro"),
    ("aider", "aider-coder", "sonnet"),
]


def test_each_recipe_calls_its_cli_as_documented(
    deployment: Deployment, wired: dict[str, str]
) -> None:
    # one served gateway for all of them: a runner per recipe, one after the other
    for cli, agent, model in CASES:
        run = _run(deployment, wired[agent], cli, model)
        assert run["state"] == "SUCCEEDED", (cli, agent, run["status_message"], run["transcript"])
        assert run["status_message"]["message"] == f"{cli} called as documented"
        assert KEYS["ANTHROPIC_API_KEY"] not in run["transcript"]

    # a stand-in that expects another model than the agent's fails the run, saying why
    run = _run(deployment, wired["claude-coder"], "claude", "sonnet")
    assert run["state"] == "FAILED"
    assert "arguments: got" in run["status_message"]["message"]
