"""Reading a definition tree from disk: the directory that holds factory.yaml, its definition
directories walked without following symbolic links, files over the size limit not read."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .codes import Code
from .diagnostics import Diagnostic, Diagnostics, Position
from .layout import DEFINITION_DIRECTORIES, place
from .parse import ParseResult, parse_tree
from .skill_files import is_skill_file
from .sources import MAX_FILE_BYTES, MAX_FILES, TREE

__all__ = [
    "DefinitionRootError",
    "DirectoryTree",
    "definition_roots_below",
    "find_definition_root",
    "parse_directory",
    "read_directory",
]

MAX_ENTRIES = 20_000  # directory entries walked before giving up
_SEARCH_DEPTH = 4


class DefinitionRootError(ValueError):
    """The directory does not hold factory.yaml; the message names any found below it."""


@dataclass(frozen=True)
class DirectoryTree:
    files: dict[str, str]
    diagnostics: tuple[Diagnostic, ...]


def find_definition_root(directory: Path) -> Path:
    """`directory` itself when it holds factory.yaml (a regular file, not a link)."""
    candidate = directory / "factory.yaml"
    if candidate.is_file() and not candidate.is_symlink():
        return directory
    if not directory.is_dir():
        raise DefinitionRootError(f"{directory}: not a directory")
    below = definition_roots_below(directory)
    hint = f"; factory trees below it: {', '.join(below)}" if below else ""
    raise DefinitionRootError(
        f"{directory} does not hold factory.yaml: give the directory that holds it{hint}"
    )


def read_directory(root: Path) -> DirectoryTree:
    """factory.yaml and the files under the definition directories, as {relative path:
    text}. Symbolic links are reported, never followed; other files are not read."""
    sink = Diagnostics()
    paths: list[str] = []
    entry = root / "factory.yaml"
    if entry.is_symlink():
        sink.add("factory.yaml", None, Code.SYMLINK, _LINK)
    elif entry.is_file():
        paths.append("factory.yaml")
    walked = [0]
    extras: list[str] = []  # skills' other files
    for top in DEFINITION_DIRECTORIES:
        _walk(root, top, paths, sink, walked, extras)
    if len(paths) > MAX_FILES:
        sink.add(
            TREE,
            None,
            Code.TOO_MANY_FILES,
            f"the tree has more than {MAX_FILES} definition files: split it",
        )
        return DirectoryTree({}, sink.sorted())
    files = {p: text for p in paths if (text := _read(root, p, sink)) is not None}
    files.update(_skill_files(root, extras))
    return DirectoryTree(files, sink.sorted())


def parse_directory(directory: Path) -> ParseResult:
    """Parse the tree whose factory.yaml is in `directory` (DefinitionRootError if none)."""
    root = find_definition_root(directory)
    tree = read_directory(root)
    return parse_tree(tree.files, found=tree.diagnostics)


def _walk(
    root: Path,
    relative: str,
    paths: list[str],
    sink: Diagnostics,
    walked: list[int],
    extras: list[str],
) -> None:
    full = root / relative
    if full.is_symlink():
        if place(relative) is not None or "/" not in relative or os.path.isdir(full):
            sink.add(relative, None, Code.SYMLINK, _LINK)
        return
    if not full.is_dir():
        if full.is_file() and place(relative) is not None:
            paths.append(relative)
        elif full.is_file() and is_skill_file(relative):
            extras.append(relative)
        return
    for child in sorted(os.listdir(full)):
        walked[0] += 1
        if walked[0] > MAX_ENTRIES or child.startswith("."):
            continue
        _walk(root, f"{relative}/{child}", paths, sink, walked, extras)


def _skill_files(root: Path, paths: list[str]) -> dict[str, str]:
    """The skills' other files that are UTF-8 text within the size limit, at most MAX_FILES;
    the rest (images, archives) are left out without a word: the format does not read them."""
    found: dict[str, str] = {}
    for relative in paths[:MAX_FILES]:
        path = root / relative
        if path.stat().st_size > MAX_FILE_BYTES:
            continue
        try:
            found[relative] = path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            continue
    return found


def _read(root: Path, relative: str, sink: Diagnostics) -> str | None:
    path = root / relative
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        sink.add(
            relative,
            None,
            Code.FILE_TOO_LARGE,
            f"the file is {size} bytes; a definition file may hold at most "
            f"{MAX_FILE_BYTES} bytes (256 KiB): shorten it",
        )
        return None
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        sink.add(
            relative,
            Position(line, column),
            Code.INVALID_ENCODING,
            "the file is not UTF-8 text; save it as UTF-8",
        )
        return None


def definition_roots_below(directory: Path) -> list[str]:
    """The directories under `directory` that hold factory.yaml (relative, sorted; hidden
    directories are not searched, nor more than 4 levels down; at most 10)."""
    found: list[str] = []
    for current, dirs, names in os.walk(directory):
        depth = len(Path(current).relative_to(directory).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < _SEARCH_DEPTH else []
        if "factory.yaml" in names:
            found.append(str(Path(current).relative_to(directory)))
        if len(found) >= 10:
            break
    return sorted(found)


_LINK = (
    "a symbolic link: links are never followed, a resource must be a regular file; "
    "replace the link with the file itself"
)
