"""The tests' one npm set-up (tests/package.json, installed into tests/node_modules by
scripts/npm-packages): the signature oracles' vendor libraries, GitHub's example payloads and
the official TypeScript client. A failed install fails the tests that need it, never skips them.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL = ROOT / "scripts" / "npm-packages"
NODE_MODULES = ROOT / "tests" / "node_modules"


@functools.cache
def _install() -> tuple[int, str]:
    done = subprocess.run(
        ["bash", str(INSTALL)], capture_output=True, text=True, check=False, timeout=600
    )
    return done.returncode, done.stdout + done.stderr


def node_modules() -> Path:
    """tests/node_modules, installed as the lock file pins it (a no-op when it is)."""
    returncode, output = _install()
    if returncode != 0 or not NODE_MODULES.is_dir():
        pytest.fail(
            f"scripts/npm-packages could not install the tests' npm packages "
            f"(exit {returncode}):\n{output}",
            pytrace=False,
        )
    return NODE_MODULES


def node() -> str:
    """The node executable (scripts/npm-packages installs it when missing)."""
    node_modules()
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not installed; scripts/npm-packages should have installed it")
    return found
