"""Every FF_* code is raised somewhere, and docs/factory-files.md shows each one."""

from __future__ import annotations

import re
from pathlib import Path

from factory_format import CODE_SUMMARIES, Code

PACKAGE = Path(__file__).resolve().parents[2] / "factory_format"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "factory-files.md"


def test_codes_are_stable_names_with_a_summary() -> None:
    assert set(CODE_SUMMARIES) == set(Code)
    for code in Code:
        assert re.fullmatch(r"FF_[A-Z_]+", code.value) and code.value == f"FF_{code.name}"


def test_every_code_is_raised_by_the_parser() -> None:
    source = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py") if p.name != "codes.py")
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
