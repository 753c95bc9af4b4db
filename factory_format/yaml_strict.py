"""Plain YAML only: one document per file, no anchors, aliases, explicit tags or merge keys,
no duplicate or non-scalar keys. Each problem is reported with its line and column; a file
with any of them yields no value (its meaning would be ambiguous)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .codes import Code
from .diagnostics import MAX_FILE_PROBLEMS, Diagnostics, Position
from .positions import DocPath, Positions
from .scalars import resolve_plain

__all__ = ["MAX_DEPTH", "MAX_FILE_NODES", "MAX_TREE_NODES", "LoadedYaml", "NodeBudget", "load_yaml"]

try:  # libyaml when present: the same events and marks, several times faster
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

MAX_DEPTH = 64
# YAML values (scalars, lists, mappings, keys included) a file and a tree may hold. Building
# each costs ~10 µs of Python; the public example trees hold at most 350 in all and 71 in one
# file. A sender who fills 2 MiB with `[1,1,1,...]` (a million values) is refused after the
# scan counts past the limit, before anything is built.
MAX_FILE_NODES = 10_000
MAX_TREE_NODES = 25_000
_Problem = tuple[Position, Code, str]


@dataclass(frozen=True)
class LoadedYaml:
    value: Any
    positions: Positions


class NodeBudget:
    """The values the files of one tree may still hold (MAX_TREE_NODES in all)."""

    __slots__ = ("left",)

    def __init__(self, left: int = MAX_TREE_NODES) -> None:
        self.left = left


class _Unusable(Exception):
    """The document cannot be read; its problems are already recorded."""


def load_yaml(
    text: str,
    path: str,
    sink: Diagnostics,
    line_offset: int = 0,
    budget: NodeBudget | None = None,
) -> LoadedYaml | None:
    """The document's value (None for an empty document) and where each part sits, or None
    after recording why the file cannot be used. `line_offset` is added to every line (for
    frontmatter, which starts below its fence); `budget`, the values the tree may still hold
    (each file at most MAX_FILE_NODES)."""
    budget = budget or NodeBudget()
    problems = _scan_events(text, line_offset, budget)
    if not problems:
        try:
            return _compose(text, line_offset, problems)
        except _Unusable:
            pass
    for where, code, message in problems:
        sink.add(path, where, code, message)
    return None


def _position(mark: Any, line_offset: int) -> Position:
    return Position(mark.line + 1 + line_offset, mark.column + 1)


def _syntax_problem(exc: yaml.YAMLError, text: str, line_offset: int) -> _Problem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        where = _position(mark, line_offset)
    else:  # a reader error: a character YAML does not allow, at a character index
        index = int(getattr(exc, "position", 0))
        line = text.count("\n", 0, index)
        where = Position(line + 1 + line_offset, index - (text.rfind("\n", 0, index) + 1) + 1)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return (
        where,
        Code.YAML_SYNTAX,
        f"YAML syntax error: {problem}; check the indentation and quoting here",
    )


class _Mapping:
    """A mapping open on the event stream: whether its next node is a key, the keys so far."""

    __slots__ = ("keys", "next_is_key")

    def __init__(self) -> None:
        self.next_is_key = True
        self.keys: set[str] = set()


def _scan_events(text: str, line_offset: int, budget: NodeBudget) -> list[_Problem]:
    """Anchors, aliases, tags, extra documents and the keys a mapping may not have (twice,
    `<<`, a list or a mapping), found on the event stream before any node is built (so an
    alias bomb is never expanded), and no further than MAX_FILE_PROBLEMS problems or the
    values the file may hold."""
    problems: list[_Problem] = []
    documents = 0
    open_nodes: list[_Mapping | None] = []  # None: a sequence
    nodes, allowed = 0, min(MAX_FILE_NODES, budget.left)
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if len(problems) > MAX_FILE_PROBLEMS:  # enough to act on; the rest is not read
                break
            if isinstance(event, yaml.NodeEvent):
                nodes += 1
                if nodes > allowed:
                    problems.append(_too_many_nodes(event, line_offset, allowed, budget))
                    break
            if isinstance(event, yaml.CollectionEndEvent):
                open_nodes.pop()
                continue
            if not isinstance(event, (yaml.NodeEvent, yaml.DocumentStartEvent)):
                continue
            where = _position(event.start_mark, line_offset)
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents == 2:
                    problems.append((where, Code.MULTIPLE_DOCUMENTS, _MULTIPLE))
                continue
            parent = open_nodes[-1] if open_nodes else None
            if parent is not None:
                if parent.next_is_key:
                    _key_problem(event, parent, where, problems)
                parent.next_is_key = not parent.next_is_key
            if isinstance(event, yaml.AliasEvent):
                problems.append((where, Code.ALIAS, _ALIAS.format(event.anchor)))
            else:
                problems.extend(_node_event_problems(event, where))
            if isinstance(event, yaml.MappingStartEvent):
                open_nodes.append(_Mapping())
            elif isinstance(event, yaml.SequenceStartEvent):
                open_nodes.append(None)
    except yaml.YAMLError as exc:
        problems.append(_syntax_problem(exc, text, line_offset))
    except RecursionError:
        problems.append((Position(1 + line_offset, 1), Code.YAML_SYNTAX, _TOO_DEEP))
    budget.left = max(0, budget.left - nodes)
    return problems


def _too_many_nodes(
    event: yaml.NodeEvent, line_offset: int, allowed: int, budget: NodeBudget
) -> _Problem:
    where = _position(event.start_mark, line_offset)
    if allowed == MAX_FILE_NODES:
        message = (
            f"the file holds more than {MAX_FILE_NODES} YAML values (keys, items, scalars); "
            "a definition file may hold at most that many: split or shorten it"
        )
        return (where, Code.FILE_TOO_LARGE, message)
    message = (
        f"the tree's files hold more than {MAX_TREE_NODES} YAML values in all (keys, items, "
        f"scalars), {budget.left} of them left for this file; split the factory"
    )
    return (where, Code.TREE_TOO_LARGE, message)


def _key_problem(
    event: yaml.NodeEvent, mapping: _Mapping, where: Position, problems: list[_Problem]
) -> None:
    """The rules of _Builder.key, on the event of a key."""
    if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
        problems.append((where, Code.NON_SCALAR_KEY, _NON_SCALAR))
    elif isinstance(event, yaml.ScalarEvent):
        if not event.style and event.value == "<<":
            problems.append((where, Code.MERGE_KEY, _MERGE))
        elif event.value in mapping.keys:
            problems.append((where, Code.DUPLICATE_KEY, _DUPLICATE.format(event.value)))
        else:
            mapping.keys.add(event.value)


def _node_event_problems(event: yaml.NodeEvent, where: Position) -> list[_Problem]:
    found: list[_Problem] = []
    if event.anchor is not None:
        found.append((where, Code.ANCHOR, _ANCHOR.format(event.anchor)))
    tag = getattr(event, "tag", None)
    if tag is not None:
        found.append((where, Code.TAG, _TAG.format(tag)))
    return found


def _compose(text: str, line_offset: int, problems: list[_Problem]) -> LoadedYaml:
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        problems.append(_syntax_problem(exc, text, line_offset))
        raise _Unusable from exc
    except RecursionError as exc:
        problems.append((Position(1 + line_offset, 1), Code.YAML_SYNTAX, _TOO_DEEP))
        raise _Unusable from exc
    if root is None:
        return LoadedYaml(None, Positions(Position(1 + line_offset, 1)))
    builder = _Builder(line_offset, Positions(_position(root.start_mark, line_offset)))
    try:
        value = builder.value(root, (), 0)
    finally:
        problems.extend(builder.problems)
    if builder.problems:
        raise _Unusable
    return LoadedYaml(value, builder.positions)


class _Builder:
    """Node tree -> plain values, recording positions and the key problems found."""

    def __init__(self, line_offset: int, positions: Positions) -> None:
        self.line_offset = line_offset
        self.positions = positions
        self.problems: list[_Problem] = []

    def where(self, node: Node) -> Position:
        return _position(node.start_mark, self.line_offset)

    def value(self, node: Node, path: DocPath, depth: int) -> Any:
        self.positions.set_value(path, self.where(node))
        if depth > MAX_DEPTH:
            self.problems.append((self.where(node), Code.INVALID_DOCUMENT, _TOO_DEEP))
            return None
        if isinstance(node, ScalarNode):
            return resolve_plain(node.value) if not node.style else node.value
        if isinstance(node, SequenceNode):
            return [self.value(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        assert isinstance(node, MappingNode)
        return self.mapping(node, path, depth)

    def mapping(self, node: MappingNode, path: DocPath, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.key(key_node, out)
            if key is None:
                continue
            self.positions.set_key((*path, key), self.where(key_node))
            out[key] = self.value(value_node, (*path, key), depth + 1)
        return out

    def key(self, node: Node, seen: dict[str, Any]) -> str | None:
        if len(self.problems) > MAX_FILE_PROBLEMS:  # enough to act on; the rest is not read
            raise _Unusable
        where = self.where(node)
        if not isinstance(node, ScalarNode):
            self.problems.append((where, Code.NON_SCALAR_KEY, _NON_SCALAR))
            return None
        if not node.style and node.value == "<<":
            self.problems.append((where, Code.MERGE_KEY, _MERGE))
            return None
        if node.value in seen:
            self.problems.append((where, Code.DUPLICATE_KEY, _DUPLICATE.format(node.value)))
            return None
        return str(node.value)


_MULTIPLE = (
    "a second YAML document starts here; a file holds exactly one document: remove this `---`"
    " and what follows, or move it to its own file"
)
_ALIAS = "YAML alias `*{}`: aliases are not allowed; write the value out in full here"
_ANCHOR = "YAML anchor `&{}`: anchors are not allowed; remove it and repeat values explicitly"
_TAG = "explicit YAML tag `{}`: tags are not allowed; remove it (quote the value for a string)"
_MERGE = "merge key `<<`: merge keys are not allowed; write the merged keys out in full"
_DUPLICATE = "key `{}` appears twice in this mapping; keep one of them"
_NON_SCALAR = "a mapping key must be a plain string, not a list or a mapping"
_TOO_DEEP = f"the document is nested more than {MAX_DEPTH} levels deep; flatten it"
