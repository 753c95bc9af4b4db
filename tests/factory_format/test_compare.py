"""The comparable form apply stores and diffs: stable, ordered, free of file locations."""

from __future__ import annotations

import json

from factory_format import FactoryTree, changed_fields, comparable, parse_tree
from tests.factory_format.support import example_files


def tree_of(files: dict[str, str]) -> FactoryTree:
    result = parse_tree(files)
    assert result.tree is not None, result.diagnostics
    return result.tree


def forms(tree: FactoryTree) -> dict[str, object]:
    return {f"{kind}:{name}": comparable(r) for (kind, name), r in tree.resources().items()}


def test_the_form_is_json_and_leaves_out_paths_and_undeclared_keys() -> None:
    tree = tree_of(example_files("02-sdlc-issue-to-pr"))
    form = forms(tree)
    json.dumps(form)
    agent = form["agent:implementer"]
    assert isinstance(agent, dict)
    assert "path" not in agent and agent["config"] == {"runner": "linux-build"}
    assert agent["effective"]["runner"] == "linux-build"
    trigger = form["automation:github-mention-assign"]["triggers"][0]  # type: ignore[index]
    assert trigger["filter"]["repos"] == {
        "in": ["acme/api-service", "acme/webapp"],
        "not_in": [],
        "by_name": False,
    }


def test_file_order_list_order_and_the_legacy_path_change_nothing() -> None:
    files = example_files("02-sdlc-issue-to-pr")
    before = forms(tree_of(files))
    shuffled = dict(reversed(list(files.items())))
    path = "automations/github-pr-closed-or-merged/automation.md"
    shuffled[path] = shuffled[path].replace(
        "[acme/api-service, acme/webapp, acme/ios-app]",
        "[acme/ios-app, acme/webapp, acme/api-service]",
    )
    legacy = shuffled.pop("automations/slack-dms/automation.md")
    shuffled["automations/slack-dms.md"] = legacy
    assert forms(tree_of(shuffled)) == before


def test_changed_fields_name_what_differs() -> None:
    files = example_files("02-sdlc-issue-to-pr")
    before = forms(tree_of(files))
    files["factory.yaml"] = files["factory.yaml"].replace("model: auto\n", "model: auto-genius\n")
    files["agents/spec/agent.md"] = files["agents/spec/agent.md"].replace(
        "---\n# Spec", "---\n# Spec (v2)"
    )
    after = forms(tree_of(files))
    changes = {key: changed_fields(before[key], after[key]) for key in before}
    assert changes["factory:"] == ["agent_defaults.harness.model"]
    assert changes["agent:spec"] == ["effective.harness.model", "prompt"]
    assert changes["agent:triage"] == []  # declares its own model
    assert changes["automation:slack-dms"] == ["effective.harness.model"]
    assert changes["runner:linux-build"] == []


def test_changed_fields_of_added_and_removed_keys() -> None:
    assert changed_fields({"a": 1, "b": {"c": 1}}, {"b": {"c": 2, "d": 3}}) == ["a", "b.c", "b.d"]
    assert changed_fields([1, 2], [2, 1]) == ["."]
    assert changed_fields({"x": [1]}, {"x": [1]}) == []
