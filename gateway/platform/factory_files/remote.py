"""`gateway apply DIR --server URL`: the tree posted to a running gateway's
/factory-files/plan or /factory-files/apply, as a CI job applies a repository (the key in
GATEWAY_API_KEY). The directory is read as `gateway apply` reads it locally; the server parses
and checks it, and answers the plan or the diagnostics."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpx
import msgspec

from factory_format import Diagnostic, read_directory
from gateway.platform.factory_files.models import Plan
from gateway.platform.factory_files.posted import local_root, relocated

TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Refused:
    """What the server answered instead of a plan: the tree's diagnostics (422), or a problem
    (`detail`, with its status)."""

    status: int
    detail: str
    diagnostics: list[Diagnostic]


def post_tree(
    server: str,
    key: str,
    directory: Path,
    *,
    dry_run: bool,
    team_uid: str | None = None,
    factory_uid: str | None = None,
) -> Plan | Refused:
    root, prefix = local_root(directory)
    read = read_directory(root)
    if read.diagnostics:  # symbolic links, files too large: the server never sees them
        found = [relocated(d, prefix) for d in read.diagnostics]
        return Refused(422, "the tree cannot be read", found)
    body: dict[str, object] = {"files": {prefix + path: text for path, text in read.files.items()}}
    if factory_uid is not None:
        body["factory_uid"] = factory_uid
    headers = {"Authorization": f"Bearer {key}"}
    if team_uid is not None:
        headers["X-Service-Team-Uid"] = team_uid
    step = "plan" if dry_run else "apply"
    url = f"{server.rstrip('/')}/api/v1/factory-files/{step}"
    answer = httpx.post(url, json=body, headers=headers, timeout=TIMEOUT_S)
    if answer.status_code == 200:
        return msgspec.json.decode(answer.content, type=Plan)
    try:
        problem = answer.json()
    except ValueError:
        problem = {}
    if not isinstance(problem, dict):
        problem = {}
    detail = str(problem.get("detail") or problem.get("title") or answer.reason_phrase)
    diagnostics = msgspec.convert(problem.get("diagnostics") or [], list[Diagnostic])
    return Refused(answer.status_code, detail, diagnostics)
