"""The import contracts of pyproject.toml (`[tool.importlinter]`, docs/architecture.md "Layers")
hold on the tree, and each breaks on the imports it forbids: a contract that cannot fail checks
nothing. `lint-imports` reads the tree from the files, so the forbidden imports are planted in a
copy of it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs lint-imports

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gateway", "filters", "factory_format")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CONTRACTS = {
    contract["id"]: contract["name"]
    for contract in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
}
# (file, the import planted at its end, the contract it breaks)
PLANTED = [
    ("gateway/foundation/store/db.py", "gateway.webhook_gateway.ingress.cache", "gateway-groups"),
    ("gateway/webhook_gateway/webhooks/models.py", "gateway.platform.runs.record.models",
     "product-boundary"),
    # the evaluator reaches the run writer through its port, never by import (no exception)
    ("gateway/webhook_gateway/evaluator/run_rows.py", "gateway.platform.run_start",
     "product-boundary"),
    ("gateway/composition/wiring.py", "gateway.composition.cli", "composition-layers"),
    ("gateway/webhook_gateway/replies/markup.py", "gateway.webhook_gateway.deliveries",
     "webhook-gateway-layers"),
    ("gateway/foundation/store/tables.py", "gateway.foundation.api.routing", "foundation-layers"),
    ("gateway/http/response_writes.py", "gateway.http.http_server", "http-layers"),
    ("gateway/kernel/ids.py", "gateway.kernel.settings", "kernel-layers"),
    ("gateway/platform/inbox/models.py", "gateway.platform.tasks.models", "platform-layers"),
    ("gateway/platform/runs/record/states.py", "gateway.platform.runs.outputs", "runs-layers"),
    ("gateway/platform/runners/registry.py", "gateway.platform.runners.leases", "runners-layers"),
    ("filters/__init__.py", "gateway.kernel.ids", "pure-libraries"),
]  # fmt: skip
# record/cancellation.py imports record/timeline.py: the other way round is a cycle ("no-cycles")
CYCLE = ("gateway/platform/runs/record/timeline.py", "gateway.platform.runs.record.cancellation")
STRAY = "gateway/stray.py"  # a top-level module no layer names: the layers are exhaustive


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    # the copy ahead of the installed tree; lines wide enough not to wrap an import
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "300"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(tree / "pyproject.toml")],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_no_contract_has_exceptions() -> None:
    """Nothing is let through: an `ignore_imports` entry would be an import the layers deny."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert [c["id"] for c in config["contracts"] if c.get("ignore_imports")] == []


def test_the_tree_keeps_every_contract() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in CONTRACTS.values():
        assert f"{name} KEPT" in done.stdout


def test_each_contract_breaks_on_an_import_it_forbids(tmp_path: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=_caches)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    for file, imported in [(file, imported) for file, imported, _ in PLANTED] + [CYCLE]:
        with (tmp_path / file).open("a") as source:
            source.write(f"\nimport {imported}  # planted by tests/test_layers.py\n")
    (tmp_path / STRAY).write_text('"""In no layer."""\n')

    done = lint_imports(tmp_path)

    assert done.returncode == 1, done.stdout + done.stderr
    for file, imported, contract in PLANTED:
        assert f"{CONTRACTS[contract]} BROKEN" in done.stdout, contract
        importer = file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        assert f"{importer} -> {imported}" in done.stdout, file
    assert f"{CONTRACTS['no-cycles']} BROKEN" in done.stdout  # the cycle, named where it closes
    assert "No cycles are allowed in gateway.platform.runs.record." in done.stdout
    assert "- .timeline -> .cancellation (1 import)" in done.stdout
    assert "gateway.stray" in done.stdout  # named as a layer missing from the contract


def _caches(directory: str, names: list[str]) -> list[str]:
    return [name for name in names if name == "__pycache__"]
