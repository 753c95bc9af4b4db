"""Trees for the factory_format tests: the public examples and a small valid tree."""

from __future__ import annotations

from pathlib import Path

from factory_format import Diagnostic, ParseResult, parse_tree

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "warp-factory-examples"
EXAMPLES = FIXTURES / "examples"
EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.iterdir())

MINIMAL: dict[str, str] = {
    "factory.yaml": (
        "schemaVersion: v1alpha1\n"
        "name: demo\n"
        "repositories:\n"
        "  - owner: acme\n"
        "    name: api\n"
        "agentDefaults:\n"
        "  model: auto\n"
        "  runner: small\n"
    ),
    "agents/boss/agent.md": "---\nagentType: FOREMAN\n---\nLead the work.\n",
    "runners/small.yaml": "platform:\n  linux:\n    dockerImage: ubuntu:24.04\n",
}


def example_files(name: str) -> dict[str, str]:
    root = EXAMPLES / name
    return {
        str(p.relative_to(root)): p.read_text("utf-8")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def parse_with(extra: dict[str, str], *, drop: tuple[str, ...] = ()) -> ParseResult:
    files = {k: v for k, v in {**MINIMAL, **extra}.items() if k not in drop}
    return parse_tree(files)


def where(result: ParseResult) -> list[tuple[str, int | None, int | None, str]]:
    """(path, line, column, code) of each diagnostic."""
    return [(d.path, d.line, d.column, d.code) for d in result.diagnostics]


def codes(result: ParseResult) -> list[str]:
    return [d.code for d in result.diagnostics]


def only(result: ParseResult) -> Diagnostic:
    assert len(result.diagnostics) == 1, result.diagnostics
    return result.diagnostics[0]


def automation(front: str, body: str = "Do the work.\n") -> dict[str, str]:
    return {"automations/job/automation.md": f"---\n{front}---\n{body}"}


def trigger(provider: str, event: str, extra: str = "") -> dict[str, str]:
    """An automation with one trigger; `extra` is YAML indented under the trigger."""
    lines = f"triggers:\n  - provider: {provider}\n    event: {event}\n"
    return automation(lines + "".join(f"    {line}\n" for line in extra.splitlines()))
