"""A valid example with five planted mistakes in four files gets exactly five diagnostics, at
the right files, lines and columns, and no tree."""

from __future__ import annotations

from factory_format import parse_tree
from tests.factory_format.support import example_files

EXAMPLE = "02-sdlc-issue-to-pr"


def plant(files: dict[str, str], path: str, old: str, new: str) -> None:
    assert files[path].count(old) == 1, (path, old)
    files[path] = files[path].replace(old, new)


def plant_five_errors(files: dict[str, str]) -> None:
    """Five mistakes in four files of the EXAMPLE tree; FIVE_DIAGNOSTICS are what they give."""
    # 1. an unknown key in factory.yaml (line 9, where credentialStrategy was)
    plant(files, "factory.yaml", "credentialStrategy: EXECUTOR", "credentialStrategyy: EXECUTOR")
    # 2. a Linux shape that is not a power of two (runners/linux-build.yaml, line 9)
    plant(files, "runners/linux-build.yaml", "vcpus: 8", "vcpus: 6")
    # 3. an automation targets an agent the tree does not declare (line 2)
    plant(
        files,
        "automations/slack-dms/automation.md",
        "---\ntriggers:",
        "---\nagent: ghost\ntriggers:",
    )
    # 4. a filter key github/issue_assigned does not have (line 19, the third trigger)
    plant(
        files,
        "automations/github-mention-assign/automation.md",
        '      assignees: [warp-factory]\n      labels: ["factory:Acme"]\n  - provider: github\n'
        "    event: pull_request_assigned",
        '      assignee: [warp-factory]\n      labels: ["factory:Acme"]\n  - provider: github\n'
        "    event: pull_request_assigned",
    )
    # 5. an event slack does not have (line 4)
    plant(
        files,
        "automations/slack-app-mentions/automation.md",
        "event: app_mention",
        "event: app_mentioned",
    )


# (path, line, column, code) of the planted mistakes, in the order diagnostics are reported
FIVE_DIAGNOSTICS = [
    ("automations/github-mention-assign/automation.md", 19, 7, "FF_INVALID_FILTER"),
    ("automations/slack-app-mentions/automation.md", 4, 12, "FF_INVALID_TRIGGER"),
    ("automations/slack-dms/automation.md", 2, 8, "FF_INVALID_REFERENCE"),
    ("factory.yaml", 9, 1, "FF_UNKNOWN_FIELD"),
    ("runners/linux-build.yaml", 9, 10, "FF_INVALID_VALUE"),
]


def test_five_planted_errors_give_five_diagnostics() -> None:
    files = example_files(EXAMPLE)
    plant_five_errors(files)

    result = parse_tree(files)

    assert result.tree is None
    assert [(d.path, d.line, d.column, d.code) for d in result.diagnostics] == FIVE_DIAGNOSTICS
    messages = [d.message for d in result.diagnostics]
    assert "did you mean `assignees`?" in messages[0]
    assert "did you mean app_mention?" in messages[1]
    assert 'no agent "ghost"' in messages[2]
    assert "did you mean `credentialStrategy`?" in messages[3]
    assert "power of two" in messages[4]


def test_all_problems_of_a_tree_are_reported_at_once() -> None:
    files = example_files(EXAMPLE)
    for path in [p for p in files if p.startswith("agents/") and p.endswith("agent.md")]:
        files[path] = files[path].replace("agentType: ", "agentTyp: ")
    result = parse_tree(files)
    unknown = [d for d in result.diagnostics if d.code == "FF_UNKNOWN_FIELD"]
    assert sorted(d.path for d in unknown) == sorted(
        p for p in files if p.startswith("agents/") and p.endswith("agent.md")
    )
    assert all(d.line == 3 and d.column == 1 for d in unknown)
