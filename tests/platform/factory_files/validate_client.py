"""A stand-in for the public validation script (`validate_factory_files.py` of the vendor's
factory skill, run by warp-factory-examples' CI, factory-format.md §6), making the same requests
with the standard library alone: the schema registry's `current_version` must be the pinned one,
then each example directory's files are posted to POST /factory-files/validate as
`{"files": [{"path", "content"}]}` (skills left out: they are no schema resources), with no key.

Exit status as the script's: 0 valid, 1 diagnostics (printed as path:line:column: code message),
2 not checked (the server unreachable, an error answer, a 429, another version).

    python validate_client.py --api-base http://127.0.0.1:8080 examples/02-sdlc-issue-to-pr
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

PINNED_SCHEMA_VERSION = "v1alpha1"


def _call(url: str, body: dict[str, object] | None = None) -> dict[str, object]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=60) as answer:
        loaded: dict[str, object] = json.loads(answer.read())
        return loaded


def _files(directory: Path) -> list[dict[str, str]]:
    return [
        {"path": path.relative_to(directory).as_posix(), "content": path.read_text()}
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != "SKILL.md" and not path.name.startswith(".")
    ]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api-base", required=True)
    parser.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    base = args.api_base.rstrip("/") + "/api/v1/factory-files"
    try:
        registry = _call(base + "/schemas")
        if registry.get("current_version") != PINNED_SCHEMA_VERSION:
            print(f"schema version {registry.get('current_version')}: not the pinned one")
            return 2
        result = _call(base + "/validate", {"files": _files(args.directory)})
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"not checked: {exc}")
        return 2
    if result.get("valid") is True:
        print(f"{args.directory}: valid ({result['schema_version']})")
        return 0
    for d in result.get("diagnostics", []):  # type: ignore[union-attr]
        print(f"{d['path']}:{d['line']}:{d['column']}: {d['code']} {d['message']}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
