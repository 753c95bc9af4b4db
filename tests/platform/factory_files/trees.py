"""Small factory trees the plan/apply tests build on: a factory with a runner and a FOREMAN
agent, plus whatever a test adds."""

from __future__ import annotations

FACTORY = """\
schemaVersion: v1alpha1
name: {name}
repositories:
  - owner: acme
    name: api
agentDefaults:
  model: auto
  runner: small
"""
RUNNER = "platform:\n  linux:\n    dockerImage: ubuntu:24.04\n"
FOREMAN = "---\nagentType: FOREMAN\n---\nLead the work.\n"


def minimal(name: str = "files-factory", files: dict[str, str] | None = None) -> dict[str, str]:
    """The smallest tree that applies, with `files` ({path: text}) added."""
    return {
        "factory.yaml": FACTORY.format(name=name),
        "runners/small.yaml": RUNNER,
        "agents/boss/agent.md": FOREMAN,
        **(files or {}),
    }


def automation(triggers: str, prompt: str = "Handle it.", **front: str) -> str:
    """An automation.md: `triggers` as YAML under `triggers:`, other frontmatter keys."""
    extra = "".join(f"{key}: {value}\n" for key, value in front.items())
    return f"---\n{extra}triggers:\n{triggers}---\n{prompt}\n"


def webhook(secret: str, mode: str = "token", scheme: str | None = None, **extra: str) -> str:
    text = f"authMode: {mode}\nsecretName: {secret}\n"
    if scheme is not None:
        text += f"signatureScheme: {scheme}\n"
    return text + "".join(f"{key}: {value}\n" for key, value in extra.items())


GITHUB_PUSH = "  - provider: github\n    event: push\n    filter:\n      repos: [acme/api]\n"


def webhook_trigger(uid: str, payload: str = "") -> str:
    text = f"  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [{uid}]\n"
    return text + (f"      payload: {payload}\n" if payload else "")
