"""The vendor JavaScript libraries (tests/oracles: @octokit/webhooks-methods, @linear/sdk) run as
test oracles: one `node` process answers a whole batch of requests (see oracle.mjs).

Missing node or missing packages fail the test, naming the fix: these oracles are never skipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ORACLES = Path(__file__).resolve().parents[1] / "oracles"


def ask(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The oracle's answers to `requests`, in order."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed; the signature tests need it (apt-get install nodejs)")
    if not (ORACLES / "node_modules").is_dir():
        pytest.fail(f"the oracle packages are not installed: npm ci --prefix {ORACLES}")
    done = subprocess.run(
        [node, str(ORACLES / "oracle.mjs")],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"the node oracle failed ({done.returncode}):\n{done.stderr}")
    answers: list[dict[str, Any]] = json.loads(done.stdout)
    assert len(answers) == len(requests)
    return answers
