"""Where each kind of file lives in a tree, and what a path says about the file at it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "DEFINITION_DIRECTORIES",
    "FileKind",
    "Placement",
    "Unsupported",
    "check_name",
    "place",
]

DEFINITION_DIRECTORIES = (
    "agents",
    "automations",
    "benchmarks",
    "runners",
    "scorers",
    "skills",
    "webhooks",
)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
_RESOURCE_FILES = frozenset(
    {"agent.md", "automation.md", "scorer.md", "SKILL.md", "suite.yaml", "factory.yaml"}
)


class FileKind(StrEnum):
    FACTORY = "factory"
    AGENT = "agent"
    AGENT_SKILL = "agent_skill"
    AUTOMATION = "automation"
    RUNNER = "runner"
    SCORER = "scorer"
    SKILL = "skill"
    WEBHOOK = "webhook"
    BENCHMARK_SUITE = "benchmark_suite"
    BENCHMARK_TASK = "benchmark_task"

    @property
    def markdown(self) -> bool:
        return self in _MARKDOWN


_MARKDOWN = frozenset(
    {FileKind.AGENT, FileKind.AGENT_SKILL, FileKind.AUTOMATION, FileKind.SCORER, FileKind.SKILL}
)


@dataclass(frozen=True)
class Placement:
    """A definition file: its kind, the resource name its path gives, and the resource it
    belongs to (the agent of an agent skill, the suite of a benchmark task)."""

    kind: FileKind
    name: str
    owner: str = ""
    legacy: bool = False  # automations/<name>.md


@dataclass(frozen=True)
class Unsupported:
    """A file that looks like a resource at a path the format does not define."""

    message: str


def place(path: str) -> Placement | Unsupported | None:
    """What the file at `path` (relative to the definition root, `/`-separated) is; None for
    a file the format ignores (README.md, hidden files, anything unrelated)."""
    parts = path.split("/")
    if any(p.startswith(".") for p in parts) or parts[-1].lower() == "readme.md":
        return None
    if parts == ["factory.yaml"]:
        return Placement(FileKind.FACTORY, "")
    placer = _PLACERS.get(parts[0])
    return placer(parts) if placer and len(parts) > 1 else None


def check_name(name: str) -> str | None:
    """Why `name` (a path segment that names a resource) is not a valid name, or None."""
    if NAME.match(name):
        return None
    shown = json.dumps(name, ensure_ascii=False)
    return (
        f"{shown} is not a valid name: use 1 to 100 letters, digits, '.', '_' or '-', starting "
        "with a letter or digit"
    )


def _stray(parts: list[str], where: str) -> Unsupported | None:
    """A resource file name (agent.md, SKILL.md, ...) at a place where none belongs."""
    if parts[-1] in _RESOURCE_FILES:
        return Unsupported(f"{'/'.join(parts)} is not a place for {parts[-1]}; {where}")
    return None


def _agents(parts: list[str]) -> Placement | Unsupported | None:
    if len(parts) == 3 and parts[2] == "agent.md":
        return Placement(FileKind.AGENT, parts[1])
    if len(parts) >= 5 and parts[2] == "skills" and parts[-1] == "SKILL.md":
        return Placement(FileKind.AGENT_SKILL, "/".join(parts[3:-1]), owner=parts[1])
    if len(parts) == 2 and parts[1].endswith(".md"):
        return Unsupported(_move(parts, f"agents/{parts[1][:-3]}/agent.md"))
    return _stray(
        parts,
        "an agent is agents/<name>/agent.md, its skills agents/<name>/skills/<skill>/SKILL.md",
    )


def _automations(parts: list[str]) -> Placement | Unsupported | None:
    if len(parts) == 3 and parts[2] == "automation.md":
        return Placement(FileKind.AUTOMATION, parts[1])
    if len(parts) == 2 and parts[1].endswith(".md"):
        return Placement(FileKind.AUTOMATION, parts[1][:-3], legacy=True)
    if len(parts) == 2 and parts[1].endswith((".yaml", ".yml")):
        stem = parts[1].rsplit(".", 1)[0]
        return Unsupported(
            f"{'/'.join(parts)}: automations are Markdown files, frontmatter then the prompt; "
            f"write it as automations/{stem}/automation.md"
        )
    return _stray(parts, "an automation is automations/<name>/automation.md")


Placer = Callable[[list[str]], "Placement | Unsupported | None"]


def _yaml_directory(kind: FileKind, directory: str) -> Placer:
    def placer(parts: list[str]) -> Placement | Unsupported | None:
        if len(parts) == 2 and parts[1].endswith(".yaml"):
            return Placement(kind, parts[1][:-5])
        if parts[-1].endswith((".yaml", ".yml")):
            stem = parts[-1].rsplit(".", 1)[0]
            return Unsupported(_move(parts, f"{directory}/{stem}.yaml"))
        return _stray(parts, f"a {kind.value} is {directory}/<name>.yaml")

    return placer


def _scorers(parts: list[str]) -> Placement | Unsupported | None:
    if len(parts) == 3 and parts[2] == "scorer.md":
        return Placement(FileKind.SCORER, parts[1])
    if len(parts) == 2 and parts[1].endswith(".md"):
        return Unsupported(_move(parts, f"scorers/{parts[1][:-3]}/scorer.md"))
    return _stray(parts, "a scorer is scorers/<name>/scorer.md")


def _skills(parts: list[str]) -> Placement | Unsupported | None:
    if len(parts) >= 3 and parts[-1] == "SKILL.md":
        return Placement(FileKind.SKILL, "/".join(parts[1:-1]))
    return _stray(parts, "a skill is skills/<skill>/SKILL.md")


def _benchmarks(parts: list[str]) -> Placement | Unsupported | None:
    if len(parts) == 3 and parts[2] == "suite.yaml":
        return Placement(FileKind.BENCHMARK_SUITE, parts[1])
    if len(parts) == 4 and parts[2] == "tasks" and parts[3].endswith(".yaml"):
        return Placement(FileKind.BENCHMARK_TASK, parts[3][:-5], owner=parts[1])
    if len(parts) == 2 and parts[1].endswith((".yaml", ".yml")):
        stem = parts[1].rsplit(".", 1)[0]
        return Unsupported(_move(parts, f"benchmarks/{stem}/suite.yaml"))
    if parts[-1] == "suite.yml" or (
        len(parts) == 4 and parts[2] == "tasks" and parts[3].endswith(".yml")
    ):
        return Unsupported(_move(parts, "/".join(parts)[:-4] + ".yaml"))
    return _stray(
        parts,
        "a benchmark suite is benchmarks/<suite>/suite.yaml, its tasks "
        "benchmarks/<suite>/tasks/<task>.yaml",
    )


def _move(parts: list[str], canonical: str) -> str:
    return f"{'/'.join(parts)} is not a path of the format; move it to {canonical}"


_PLACERS: dict[str, Placer] = {
    "agents": _agents,
    "automations": _automations,
    "runners": _yaml_directory(FileKind.RUNNER, "runners"),
    "scorers": _scorers,
    "skills": _skills,
    "webhooks": _yaml_directory(FileKind.WEBHOOK, "webhooks"),
    "benchmarks": _benchmarks,
}
