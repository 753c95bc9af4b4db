"""The vendor JavaScript libraries (@octokit/webhooks-methods, @linear/sdk, from the tests' npm
packages: tests/npm_packages.py) run as test oracles: one `node` process answers a whole batch of
requests (see tests/oracles/oracle.mjs).

A failed install fails the test, naming the fix: these oracles are never skipped.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.npm_packages import node

ORACLES = Path(__file__).resolve().parents[1] / "oracles"


def ask(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The oracle's answers to `requests`, in order."""
    done = subprocess.run(
        [node(), str(ORACLES / "oracle.mjs")],
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
