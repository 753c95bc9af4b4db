"""Where a tree's definition root is: a posted tree's paths are relative to the repository root
(a CI job posts the repository), a directory given on the command line may be the repository.
The root is the directory holding factory.yaml; when exactly one directory of the repository
holds one, that is the root, and diagnostics name paths as the repository has them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from factory_format import (
    Code,
    DefinitionRootError,
    Diagnostic,
    ParseResult,
    definition_roots_below,
    parse_tree,
    read_directory,
)

FACTORY_FILE = "factory.yaml"


@dataclass(frozen=True)
class Parsed:
    result: ParseResult
    prefix: str  # the definition root's path in the repository, "" or ending in "/"

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """The parse's diagnostics, with paths as the repository has them."""
        return [relocated(d, self.prefix) for d in self.result.diagnostics]


def parse_posted(files: Mapping[str, Any]) -> Parsed:
    roots = _roots(files)
    if len(roots) > 1:
        found = ", ".join(root + FACTORY_FILE for root in roots)
        message = f"the tree holds {len(roots)} factory.yaml ({found}); post one tree at a time"
        diagnostic = Diagnostic(
            path=FACTORY_FILE,
            line=None,
            column=None,
            code=Code.MISSING_FACTORY.value,
            message=message,
        )
        return Parsed(ParseResult(diagnostics=(diagnostic,)), "")
    prefix = roots[0] if roots else ""
    if not prefix:
        return Parsed(parse_tree(dict(files)), "")
    inside = {
        _clean(path)[len(prefix) :]: text
        for path, text in files.items()
        if _clean(path).startswith(prefix)  # files outside the definition root are not its
    }
    return Parsed(parse_tree(inside), prefix)


def parse_local(directory: Path) -> Parsed:
    """The tree in `directory`, or in the one directory below it that holds factory.yaml."""
    root, prefix = local_root(directory)
    read = read_directory(root)
    return Parsed(parse_tree(read.files, found=read.diagnostics), prefix)


def local_root(directory: Path) -> tuple[Path, str]:
    """(the definition root: `directory` or the one directory below it that holds
    factory.yaml, its path below `directory` ("" or ending in "/"))."""
    if (directory / FACTORY_FILE).is_file():
        return directory, ""
    below = [p for p in definition_roots_below(directory) if p != "."]
    if len(below) != 1:
        hint = f": factory trees below it: {', '.join(below)}" if below else ""
        raise DefinitionRootError(
            f"{directory} does not hold factory.yaml, nor does exactly one directory below "
            f"it{hint}; give the directory that holds it"
        )
    return directory / below[0], below[0] + "/"


def relocated(diagnostic: Diagnostic, prefix: str) -> Diagnostic:
    if not prefix or diagnostic.path == ".":
        return diagnostic
    return Diagnostic(
        path=prefix + diagnostic.path,
        line=diagnostic.line,
        column=diagnostic.column,
        code=diagnostic.code,
        message=diagnostic.message,
    )


def _clean(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _roots(files: Mapping[str, Any]) -> list[str]:
    """ "" when factory.yaml is at the top, else the directories holding one (not hidden)."""
    paths = [_clean(p) for p in files if isinstance(p, str)]
    if FACTORY_FILE in paths:
        return [""]
    return sorted(
        p[: -len(FACTORY_FILE)]
        for p in paths
        if p.endswith("/" + FACTORY_FILE)
        and not any(part.startswith(".") or not part for part in p.split("/")[:-1])
    )
