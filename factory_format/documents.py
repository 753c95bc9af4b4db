"""A definition file read into a document: its root mapping, where each part of it sits, its
Markdown body, and which parts failed schema validation (the rules that read a part skip it
then, so one mistake is reported once)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .codes import Code
from .diagnostics import Diagnostics, Position
from .frontmatter import FrontmatterError, split_frontmatter
from .layout import FileKind
from .positions import DocPath, Positions
from .sources import SourceFile
from .yaml_strict import NodeBudget, load_yaml

__all__ = ["Document", "load_document"]


@dataclass
class Document:
    source: SourceFile
    value: dict[str, Any]
    positions: Positions
    body: str | None
    faults: list[DocPath] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.source.path

    @property
    def kind(self) -> FileKind:
        return self.source.kind

    @property
    def name(self) -> str:
        return self.source.placement.name

    def clean(self, path: DocPath = ()) -> bool:
        """No schema fault lies at or under `path`."""
        return not any(f[: len(path)] == path for f in self.faults)

    def get(self, path: DocPath) -> Any:
        """The value at `path` if it exists and is clean, else None."""
        if not self.clean(path):
            return None
        value: Any = self.value
        for part in path:
            if isinstance(value, dict) and isinstance(part, str):
                value = value.get(part)
            elif isinstance(value, list) and isinstance(part, int) and part < len(value):
                value = value[part]
            else:
                return None
        return value

    def report(
        self, sink: Diagnostics, path: DocPath, code: Code, message: str, *, at_key: bool = False
    ) -> None:
        where = self.positions.key(path) if at_key else self.positions.value(path)
        sink.add(self.path, where, code, message)


def load_document(
    source: SourceFile, sink: Diagnostics, budget: NodeBudget | None = None
) -> Document | None:
    """The document of `source`, or None once its problems are reported; `budget`: the YAML
    values the tree's files may still hold."""
    body: str | None = None
    text, offset = source.text, 0
    if source.kind.markdown:
        try:
            split = split_frontmatter(source.text)
        except FrontmatterError as exc:
            sink.add(source.path, Position(exc.line, 1), Code.MALFORMED_FRONTMATTER, exc.message)
            return None
        text, offset, body = split.frontmatter, 1, split.body
    loaded = load_yaml(text, source.path, sink, line_offset=offset, budget=budget)
    if loaded is None:
        return None
    value = loaded.value
    if value is None and source.kind.markdown:
        value = {}  # empty frontmatter is a valid resource
    if not isinstance(value, dict):
        what = "empty" if value is None else f"a {_kind_of(value)}, not a mapping of keys"
        sink.add(
            source.path,
            loaded.positions.value(()),
            Code.INVALID_DOCUMENT,
            f"the document is {what}; write its keys as `key: value` lines",
        )
        return None
    return Document(source, value, loaded.positions, body)


def _kind_of(value: object) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, bool):
        return "boolean"
    return "number" if isinstance(value, int | float) else "string"
