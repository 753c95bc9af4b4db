"""Every FF_* code is raised somewhere, and docs/factory-files.md shows each one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec

from factory_format import CODE_SUMMARIES, Code, parse_tree
from factory_format.triggers import CATALOGUE
from tests.factory_format.support import MINIMAL

PACKAGE = Path(__file__).resolve().parents[2] / "factory_format"
# the checks only the server makes (factory_format.Code names them all)
SERVER_CHECKS = Path(__file__).resolve().parents[2] / "gateway" / "platform" / "factory_files"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "factory-files.md"


def test_codes_are_stable_names_with_a_summary() -> None:
    assert set(CODE_SUMMARIES) == set(Code)
    for code in Code:
        assert re.fullmatch(r"FF_[A-Z_]+", code.value) and code.value == f"FF_{code.name}"


def test_every_code_is_raised_by_the_parser() -> None:
    files = [*PACKAGE.rglob("*.py"), *SERVER_CHECKS.glob("*.py")]
    source = "\n".join(p.read_text() for p in files if p.name != "codes.py")
    schemas = "\n".join(p.read_text() for p in PACKAGE.rglob("*.schema.json"))
    defaults = {
        "UNKNOWN_FIELD",
        "MISSING_FIELD",
        "INVALID_TYPE",
        "INVALID_VALUE",
        "DUPLICATE_VALUE",
        "CONFLICTING_FIELDS",
    }  # shape_check's keyword defaults
    for code in Code:
        raised = f"Code.{code.name}" in source or code.value in schemas
        assert raised or code.name in defaults, code


def test_the_docs_show_an_example_of_every_code() -> None:
    text = DOCS.read_text()
    for code in Code:
        section = re.search(rf"^### `{code.value}`\n(.*?)(?=^### |^## |\Z)", text, re.M | re.S)
        assert section, f"docs/factory-files.md has no section for {code.value}"
        assert "```" in section.group(1), f"the {code.value} section has no example"


def _sections() -> dict[str, str]:
    text = DOCS.read_text()
    return {
        m.group(1): m.group(2)
        for m in re.finditer(r"^### `(FF_[A-Z_]+)`\n(.*?)(?=^### |^## |\Z)", text, re.M | re.S)
    }


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def test_each_example_in_the_docs_gives_the_diagnostics_shown() -> None:
    for code, section in _sections().items():
        shown = [
            json.loads(line) for block in _blocks(section, "json") for line in block.splitlines()
        ]
        assert shown and all(d["code"] == code for d in shown), code
        trees = _blocks(section, "text")
        if not trees:
            continue  # a whole-file or whole-tree problem, shown without its input
        files = {
            m.group(1): m.group(2) + "\n"
            for m in re.finditer(
                r"^==> (.+?) <==\n(.*?)(?=^==> |\Z)", trees[0].rstrip("\n"), re.M | re.S
            )
        }
        result = parse_tree({**MINIMAL, **files})
        found = [msgspec.to_builtins(d) for d in result.diagnostics]
        for diagnostic in shown:
            assert diagnostic in found, (code, diagnostic, found)


def test_the_docs_list_every_event_of_the_catalogue() -> None:
    text = DOCS.read_text()
    for provider in CATALOGUE:
        for spec in provider.events:
            row = next(
                (
                    line
                    for line in text.splitlines()
                    if line.startswith(f"| `{provider.name}` |") and f"`{spec.event}`" in line
                ),
                None,
            )
            assert row is not None, (provider.name, spec.event)
            for key in spec.keys:
                assert f"`{key.name}`" in row, (spec.event, key.name)
