"""The directory prometheus_client's multiprocess mode keeps its files in, for `gateway serve`.

Its processes (HTTP workers, the evaluator child) must all see PROMETHEUS_MULTIPROC_DIR before
they import prometheus_client, so `gateway serve` sets it before it starts any of them:
- unset: a fresh private directory, removed when the server stops (one a killed server left
  behind is removed by the next server that starts);
- set by the operator (e.g. shared with a `gateway worker` on the same host): its *.db files
  are removed at start, since counts left by an earlier server would otherwise be added in.
Files of workers that died mid-run stay until then: their counts are part of the totals
(counters only ever add up; the gauges are not kept in files).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
PREFIX = "gateway-metrics-"  # then the pid of the server that made it


def prepare_multiprocess_dir() -> Callable[[], None]:
    """Points PROMETHEUS_MULTIPROC_DIR at a directory ready for this server; returns what to
    call when the server has stopped."""
    given = os.environ.get(MULTIPROC_ENV)
    if given:
        directory = Path(given)
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("*.db"):
            stale.unlink(missing_ok=True)
        return lambda: None
    _remove_orphans()
    created = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
    os.environ[MULTIPROC_ENV] = created

    def remove() -> None:
        shutil.rmtree(created, ignore_errors=True)
        os.environ.pop(MULTIPROC_ENV, None)

    return remove


def _remove_orphans() -> None:
    """Directories made by servers that were killed before they could remove them."""
    for directory in Path(tempfile.gettempdir()).glob(f"{PREFIX}*-*"):
        pid = directory.name[len(PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(directory, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
