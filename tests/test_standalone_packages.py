"""filters/ and factory_format/ are libraries the gateway uses, never the other way round:
neither imports gateway, a web framework, a database or Redis (docs/architecture.md). And the
tests never import the benchmarks: what both use is in testbed/."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {
    "gateway",
    "starlette",
    "uvicorn",
    "redis",
    "sqlalchemy",
    "asyncpg",
    "aiosqlite",
    "alembic",
}
ALLOWED_THIRD_PARTY = {
    "filters": set(),
    "factory_format": {"filters", "jsonschema", "msgspec", "referencing", "yaml"},
}


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("package", sorted(ALLOWED_THIRD_PARTY))
def test_a_library_imports_no_gateway_framework_or_store(package: str) -> None:
    import sys

    modules = sorted((ROOT / package).rglob("*.py"))
    assert modules
    for module in modules:
        roots = imported_roots(module) - {"__future__", package}
        assert not roots & FORBIDDEN, module
        third_party = {r for r in roots if r not in sys.stdlib_module_names}
        assert third_party <= ALLOWED_THIRD_PARTY[package], (module, third_party)


def _python_files(folder: str) -> list[Path]:
    found: list[Path] = []
    for directory, subdirectories, files in os.walk(ROOT / folder):
        subdirectories[:] = [d for d in subdirectories if d != "node_modules"]  # npm's, not ours
        found += [Path(directory) / name for name in files if name.endswith(".py")]
    return sorted(found)


IMPORTS_OF = r"^[ \t]*(?:from|import)[ \t]+({})\b"


def _importing(folder: str, packages: str) -> list[str]:
    """The modules of `folder` with an import statement of any of `packages` (a regular
    expression's alternatives): a scan of the text, a tenth of the time of parsing them."""
    pattern = re.compile(IMPORTS_OF.format(packages), re.MULTILINE)
    return [
        str(path.relative_to(ROOT))
        for path in _python_files(folder)
        if pattern.search(path.read_text())
    ]


def test_the_tests_never_import_the_benchmarks() -> None:
    """What both use is in testbed/; a benchmark may use a test's helper, never the other way
    round, so no change to a benchmark can break a test."""
    importing = _importing("tests", "benchmarks")
    assert not importing, f"tests importing benchmarks/: {importing}"


def test_testbed_imports_neither_the_tests_nor_the_benchmarks() -> None:
    importing = _importing("testbed", "tests|benchmarks")
    assert not importing, importing
