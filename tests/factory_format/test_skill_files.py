"""A skill's other files (scripts, references) travel with it: posted or read from a directory,
each skill gets the text files of its own directory (a nested skill has its own), and plans
compare them as part of the skill."""

from __future__ import annotations

from pathlib import Path

from factory_format import parse_directory
from factory_format.compare import comparable
from tests.factory_format.support import MINIMAL, parse_with

SKILL = "---\nname: {name}\n---\nFollow it.\n"


def test_each_skill_gets_the_text_files_of_its_own_directory() -> None:
    result = parse_with(
        {
            "skills/style/SKILL.md": SKILL.format(name="style"),
            "skills/style/scripts/lint.sh": "#!/bin/sh\necho lint\n",
            "skills/style/README.md": "about the skill\n",
            "skills/style/.secret": "hidden files are never read\n",
            "skills/style/python/SKILL.md": SKILL.format(name="python"),
            "skills/style/python/rules.md": "PEP 8\n",
            "agents/boss/skills/plan/SKILL.md": SKILL.format(name="plan"),
            "agents/boss/skills/plan/template.md": "# Plan\n",
            "skills/empty/SKILL.md": SKILL.format(name="empty"),
            "skills/style/nul.bin": "a\x00b",
            "skills/notes.md": "not in any skill's directory\n",
        }
    )
    assert result.tree is not None, result.diagnostics
    files = {(s.agent, s.name): s.files for s in result.tree.skills}
    assert files == {
        (None, "style"): {
            "README.md": "about the skill\n",
            "scripts/lint.sh": "#!/bin/sh\necho lint\n",
        },
        (None, "style/python"): {"rules.md": "PEP 8\n"},
        (None, "empty"): files[(None, "empty")],
        ("boss", "plan"): {"template.md": "# Plan\n"},
    }
    assert not files[(None, "empty")]  # none: UNSET
    # a plan compares a skill's files with it (a skill without any has no `files` to compare)
    style = next(s for s in result.tree.skills if s.name == "style")
    assert comparable(style)["files"] == files[(None, "style")]
    empty = next(s for s in result.tree.skills if s.name == "empty")
    assert "files" not in comparable(empty)


def test_a_directory_tree_reads_the_skills_text_files_and_skips_binary_ones(
    tmp_path: Path,
) -> None:
    files = {
        **MINIMAL,
        "skills/style/SKILL.md": SKILL.format(name="style"),
        "skills/style/scripts/lint.sh": "#!/bin/sh\necho lint\n",
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    (tmp_path / "skills/style/logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    result = parse_directory(tmp_path)
    assert result.tree is not None and not result.diagnostics, result.diagnostics
    (style,) = result.tree.skills
    assert style.files == {"scripts/lint.sh": "#!/bin/sh\necho lint\n"}
