"""A posted tree ({relative path: text}) -> the definition files to parse, with the path,
size and duplicate checks that come before any parsing."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .codes import Code
from .diagnostics import Diagnostics, Position, show
from .layout import FileKind, Placement, Unsupported, check_name, place

__all__ = [
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_TREE_BYTES",
    "TREE",
    "SourceFile",
    "collect_sources",
]

MAX_FILES = 256
MAX_FILE_BYTES = 256 * 1024
MAX_TREE_BYTES = 2 * 1024 * 1024
TREE = "."  # the path of diagnostics about the tree as a whole


@dataclass(frozen=True)
class SourceFile:
    """`readable` is False for a file whose name or text was refused: it still declares its
    resource (so nothing else is reported about that resource being absent), but is not
    parsed."""

    path: str
    placement: Placement
    text: str
    readable: bool = True

    @property
    def kind(self) -> FileKind:
        return self.placement.kind


def collect_sources(files: Mapping[str, str], sink: Diagnostics) -> list[SourceFile] | None:
    """The definition files of the tree, sorted by path; files the format ignores are left
    out. None when the tree as a whole is over a limit (nothing of it is parsed then)."""
    found: dict[str, SourceFile] = {}
    for raw_path, text in files.items():
        if not isinstance(raw_path, str) or not isinstance(text, str):
            sink.add(
                str(raw_path),
                None,
                Code.INVALID_DOCUMENT,
                "a posted file is a path and its text, both strings",
            )
            continue
        path = _clean_path(raw_path, sink)
        if path is None:
            continue
        placement = place(path)
        if isinstance(placement, Unsupported):
            sink.add(path, None, Code.UNSUPPORTED_PATH, placement.message)
        elif placement is not None and path in found:
            sink.add(path, None, Code.DUPLICATE_PATH, "this path is posted twice; post it once")
        elif placement is not None:
            readable = _name_ok(path, placement, sink) and _text_ok(path, text, sink)
            found[path] = SourceFile(path, placement, text.replace("\r\n", "\n"), readable)
    sources = [found[p] for p in sorted(found)]
    if not _within_tree_limits(sources, sink):
        return None
    _check_duplicate_resources(sources, sink)
    return sources


def _clean_path(raw: str, sink: Diagnostics) -> str | None:
    path = raw[2:] if raw.startswith("./") else raw
    segments = path.split("/")
    if path.startswith("/") or "\\" in path or any(s in ("", ".", "..") for s in segments):
        sink.add(
            raw,
            None,
            Code.INVALID_PATH,
            "paths are relative to the directory holding factory.yaml, with `/` between "
            "segments and no empty, `.` or `..` segment (for example agents/foreman/agent.md)",
        )
        return None
    return path


def _name_ok(path: str, placement: Placement, sink: Diagnostics) -> bool:
    names = placement.name.split("/") if placement.name else []
    for name in [*names, *([placement.owner] if placement.owner else [])]:
        problem = check_name(name)
        if problem is not None:
            sink.add(path, None, Code.INVALID_NAME, f"{problem}; rename the file or directory")
            return False
    return True


_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")


def _text_ok(path: str, text: str, sink: Diagnostics) -> bool:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        sink.add(
            path,
            None,
            Code.FILE_TOO_LARGE,
            f"the file is {size} bytes; a definition file may hold at most "
            f"{MAX_FILE_BYTES} bytes (256 KiB): shorten it",
        )
        return False
    found = _NOT_TEXT.search(text)  # a regular expression: a loop in Python took 0.2 s a MiB
    if found is None:
        return True
    index = found.start()
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    what = "a NUL character" if found.group() == "\x00" else "an unpaired surrogate"
    sink.add(
        path,
        Position(line, column),
        Code.INVALID_ENCODING,
        f"the text holds {what}, which UTF-8 text files cannot; remove it",
    )
    return False


def _within_tree_limits(sources: list[SourceFile], sink: Diagnostics) -> bool:
    if len(sources) > MAX_FILES:
        sink.add(
            TREE,
            None,
            Code.TOO_MANY_FILES,
            f"the tree has {len(sources)} definition files; at most {MAX_FILES} are "
            "accepted: split it into several factories",
        )
        return False
    total = sum(len(s.text.encode("utf-8", "surrogatepass")) for s in sources)
    if total > MAX_TREE_BYTES:
        sink.add(
            TREE,
            None,
            Code.TREE_TOO_LARGE,
            f"the definition files add up to {total} bytes; at most {MAX_TREE_BYTES} "
            "(2 MiB) are accepted: shorten the prompts or split the factory",
        )
        return False
    return True


def _check_duplicate_resources(sources: list[SourceFile], sink: Diagnostics) -> None:
    """automations/<n>.md beside automations/<n>/automation.md declares <n> twice."""
    directory = {
        s.placement.name
        for s in sources
        if s.kind is FileKind.AUTOMATION and not s.placement.legacy
    }
    for source in sources:
        if source.placement.legacy and source.placement.name in directory:
            name = source.placement.name
            sink.add(
                source.path,
                None,
                Code.DUPLICATE_PATH,
                f"automation {show(name)} is also declared by automations/{name}/automation.md;"
                f" keep one of the two files",
            )
