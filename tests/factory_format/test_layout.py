"""Paths: which file is which resource, what is ignored, what is at a wrong place; the size
limits; reading a directory without following links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from factory_format import (
    MAX_FILE_BYTES,
    MAX_FILES,
    DefinitionRootError,
    FileKind,
    find_definition_root,
    parse_directory,
    read_directory,
)
from factory_format.layout import Placement, Unsupported, place
from tests.factory_format.support import MINIMAL, parse_with, where


@pytest.mark.parametrize(
    ("path", "kind", "name", "owner"),
    [
        ("factory.yaml", FileKind.FACTORY, "", ""),
        ("agents/boss/agent.md", FileKind.AGENT, "boss", ""),
        ("agents/boss/skills/tests/SKILL.md", FileKind.AGENT_SKILL, "tests", "boss"),
        ("agents/boss/skills/a/b/SKILL.md", FileKind.AGENT_SKILL, "a/b", "boss"),
        ("automations/triage/automation.md", FileKind.AUTOMATION, "triage", ""),
        ("automations/triage.md", FileKind.AUTOMATION, "triage", ""),
        ("runners/linux.yaml", FileKind.RUNNER, "linux", ""),
        ("scorers/quality/scorer.md", FileKind.SCORER, "quality", ""),
        ("skills/conventions/SKILL.md", FileKind.SKILL, "conventions", ""),
        ("skills/team/review/SKILL.md", FileKind.SKILL, "team/review", ""),
        ("webhooks/stripe.yaml", FileKind.WEBHOOK, "stripe", ""),
        ("benchmarks/smoke/suite.yaml", FileKind.BENCHMARK_SUITE, "smoke", ""),
        ("benchmarks/smoke/tasks/login.yaml", FileKind.BENCHMARK_TASK, "login", "smoke"),
    ],
)
def test_paths_of_the_format(path: str, kind: FileKind, name: str, owner: str) -> None:
    placement = place(path)
    assert isinstance(placement, Placement)
    assert (placement.kind, placement.name, placement.owner) == (kind, name, owner)
    assert placement.legacy == (path == "automations/triage.md")


@pytest.mark.parametrize(
    "path",
    [
        "README.md",
        "agents/README.md",
        "automations/readme.md",
        "agents/boss/notes.md",
        "automations/triage/README.md",
        "docs/agent.md",
        ".github/workflows/validate.yml",
        "agents/.draft/agent.md",
        "scripts/check.py",
        "benchmarks/smoke/fixtures/data.json",
    ],
)
def test_unrelated_files_are_ignored(path: str) -> None:
    assert place(path) is None


@pytest.mark.parametrize(
    ("path", "hint"),
    [
        ("scorers/quality.md", "scorers/quality/scorer.md"),
        ("agents/boss.md", "agents/boss/agent.md"),
        ("automations/triage.yaml", "automations/triage/automation.md"),
        ("runners/linux.yml", "runners/linux.yaml"),
        ("runners/x/linux.yaml", "runners/linux.yaml"),
        ("webhooks/hook.yml", "webhooks/hook.yaml"),
        ("benchmarks/smoke.yaml", "benchmarks/smoke/suite.yaml"),
        ("benchmarks/smoke/suite.yml", "benchmarks/smoke/suite.yaml"),
        ("benchmarks/smoke/tasks/a.yml", "benchmarks/smoke/tasks/a.yaml"),
        ("agents/boss/SKILL.md", "agents/<name>/skills/<skill>/SKILL.md"),
        ("skills/agent.md", "skills/<skill>/SKILL.md"),
        ("scorers/q/agent.md", "scorers/<name>/scorer.md"),
    ],
)
def test_a_resource_at_a_wrong_place_is_unsupported(path: str, hint: str) -> None:
    placement = place(path)
    assert isinstance(placement, Unsupported) and hint in placement.message
    result = parse_with({path: "x"})
    assert where(result) == [(path, None, None, "FF_UNSUPPORTED_PATH")]


def test_flat_and_directory_automation_of_one_name() -> None:
    text = "---\ntriggers: [{provider: slack, event: app_mention}]\n---\nHi\n"
    result = parse_with({"automations/x.md": text, "automations/x/automation.md": text})
    assert where(result) == [("automations/x.md", None, None, "FF_DUPLICATE_PATH")]
    legacy = parse_with({"automations/x.md": text})
    assert legacy.tree is not None and [a.name for a in legacy.tree.automations] == ["x"]


@pytest.mark.parametrize(
    "path",
    [
        "/factory.yaml",
        "../agents/a/agent.md",
        "agents//a/agent.md",
        "agents/./a/agent.md",
        "agents\\a\\agent.md",
    ],
)
def test_paths_must_be_clean_and_relative(path: str) -> None:
    assert where(parse_with({path: "x"})) == [(path, None, None, "FF_INVALID_PATH")]


def test_a_leading_dot_slash_is_accepted() -> None:
    files = {f"./{k}": v for k, v in MINIMAL.items()}
    assert parse_with({}, drop=tuple(MINIMAL)).diagnostics != ()
    from factory_format import parse_tree

    assert parse_tree(files).ok


@pytest.mark.parametrize("name", ["bad name", "-dash", "a" * 101, "ünï"])
def test_names_from_paths(name: str) -> None:
    path = f"runners/{name}.yaml"
    assert where(parse_with({path: "x"})) == [(path, None, None, "FF_INVALID_NAME")]


def test_size_limits() -> None:
    big = "description: " + "x" * MAX_FILE_BYTES + "\n"
    assert where(parse_with({"runners/big.yaml": big})) == [
        ("runners/big.yaml", None, None, "FF_FILE_TOO_LARGE")
    ]
    many = {f"skills/s{i}/SKILL.md": "---\n---\n" for i in range(MAX_FILES)}
    assert where(parse_with(many)) == [(".", None, None, "FF_TOO_MANY_FILES")]
    prompt = "---\n---\n" + "p" * (MAX_FILE_BYTES - 100)
    heavy = {f"skills/s{i}/SKILL.md": prompt for i in range(9)}
    assert where(parse_with(heavy)) == [(".", None, None, "FF_TREE_TOO_LARGE")]


def test_unrelated_files_do_not_count_against_the_limits() -> None:
    extra = {f"docs/page{i}.md": "x" * 1000 for i in range(MAX_FILES + 1)}
    assert parse_with(extra).ok


def test_nul_characters_and_lone_surrogates() -> None:
    result = parse_with({"agents/boss/agent.md": "---\nagentType: FOREMAN\n---\nab\x00c\n"})
    assert where(result) == [("agents/boss/agent.md", 4, 3, "FF_INVALID_ENCODING")]
    result = parse_with({"runners/small.yaml": "description: \ud800\n"})
    assert where(result) == [("runners/small.yaml", 1, 14, "FF_INVALID_ENCODING")]


def test_missing_factory_points_at_a_factory_one_level_down() -> None:
    files = {f"examples/x/{k}": v for k, v in MINIMAL.items()}
    from factory_format import parse_tree

    result = parse_tree(files)
    assert where(result) == [("factory.yaml", None, None, "FF_MISSING_FACTORY")]
    assert "examples/x/factory.yaml" in result.diagnostics[0].message


def write_tree(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def test_a_definition_root_below_the_repository_root(tmp_path: Path) -> None:
    write_tree(tmp_path / "factories" / "main", MINIMAL)
    (tmp_path / "README.md").write_text("# repo")
    with pytest.raises(DefinitionRootError, match="factories/main"):
        find_definition_root(tmp_path)
    root = tmp_path / "factories" / "main"
    assert find_definition_root(root) == root
    assert parse_directory(root).ok


def test_links_are_reported_and_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_tree(outside, {"agent.md": "---\nagentType: CUSTOM\n---\n", "r.yaml": "x: 1\n"})
    root = tmp_path / "root"
    write_tree(root, MINIMAL)
    (root / "agents" / "linked").mkdir()
    os.symlink(outside / "agent.md", root / "agents" / "linked" / "agent.md")
    os.symlink(outside, root / "skills")
    os.symlink(outside / "r.yaml", root / "agents" / "boss" / "notes.md")  # unrelated: ignored
    tree = read_directory(root)
    assert sorted(tree.files) == sorted(MINIMAL)
    assert [(d.path, d.code) for d in tree.diagnostics] == [
        ("agents/linked/agent.md", "FF_SYMLINK"),
        ("skills", "FF_SYMLINK"),
    ]
    result = parse_directory(root)
    assert not result.ok and [d.code for d in result.diagnostics] == ["FF_SYMLINK"] * 2


def test_a_linked_factory_yaml_is_no_root(tmp_path: Path) -> None:
    write_tree(tmp_path / "real", MINIMAL)
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(tmp_path / "real" / "factory.yaml", root / "factory.yaml")
    with pytest.raises(DefinitionRootError):
        find_definition_root(root)
    assert [d.code for d in read_directory(root).diagnostics] == ["FF_SYMLINK"]


def test_files_that_are_not_utf8_or_too_large_are_not_read(tmp_path: Path) -> None:
    write_tree(tmp_path, MINIMAL)
    (tmp_path / "runners" / "latin.yaml").write_bytes(b"description: caf\xe9\n")
    (tmp_path / "runners" / "big.yaml").write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    (tmp_path / "runners" / "bom.yaml").write_bytes(
        b"\xef\xbb\xbfplatform: {linux: {dockerImage: u}}\n"
    )
    tree = read_directory(tmp_path)
    assert [(d.path, d.line, d.column, d.code) for d in tree.diagnostics] == [
        ("runners/big.yaml", None, None, "FF_FILE_TOO_LARGE"),
        ("runners/latin.yaml", 1, 17, "FF_INVALID_ENCODING"),
    ]
    assert tree.files["runners/bom.yaml"].startswith("platform:")
