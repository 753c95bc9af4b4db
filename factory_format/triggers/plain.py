"""Triggers given as plain data (a JSON body) checked by the very rules a file's triggers are:
the automation schema's trigger shape, the catalogue, the matcher grammar, cron and schedule
names. Problems and the references only a server can resolve come back with the path of their
value (("triggers", 0, "filter", "repos")), not a line: the data was never a file.

```python
checked = check_plain_triggers([{"provider": "github", "event": "push"}])
checked.triggers  # the canonical Triggers, or None when `problems` is not empty
```
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from ..builders.automations import check_schedule_names
from ..builders.context import BuildContext, TreeNames
from ..diagnostics import Diagnostics, Position
from ..documents import Document
from ..layout import FileKind, Placement
from ..model import DeferredKind
from ..positions import DocPath, Positions
from ..schemas import validator_for
from ..shape_check import check_shape
from ..sources import SourceFile
from .check import check_trigger
from .model import Trigger

__all__ = ["PlainProblem", "PlainReference", "PlainTriggers", "check_plain_triggers"]

_PLACE = "<request>"


class PlainProblem(Struct, frozen=True, kw_only=True):
    """`path` from the root of the checked value: ("triggers", 1, "event")."""

    path: DocPath
    code: str
    message: str


class PlainReference(Struct, frozen=True, kw_only=True):
    """A webhook UID, schedule id or provider name the server resolves, and where it is."""

    kind: DeferredKind
    value: str
    path: DocPath
    detail: str = ""


class PlainTriggers(Struct, frozen=True, kw_only=True):
    triggers: tuple[Trigger, ...] | None
    problems: tuple[PlainProblem, ...] = ()
    references: tuple[PlainReference, ...] = ()


def check_plain_triggers(raw: Any) -> PlainTriggers:
    """`raw` as an automation's `triggers` list: the canonical triggers, or every problem."""
    value = {"triggers": raw}
    positions, paths = _numbered(value)
    source = SourceFile(_PLACE, Placement(FileKind.AUTOMATION, "request"), "")
    doc = Document(source, value, positions, body="")
    sink = Diagnostics()
    ctx = BuildContext(sink, _NO_NAMES)
    validator = validator_for(FileKind.AUTOMATION)
    assert validator is not None
    check_shape(doc, validator, sink)
    count = len(raw) if isinstance(raw, list) and doc.clean(("triggers",)) else 0
    checked = [check_trigger(doc, i, ctx) for i in range(count)]
    check_schedule_names(doc, checked, ctx)
    problems = tuple(
        PlainProblem(path=paths.get(d.line or 0, ()), code=d.code, message=d.message)
        for d in sink.sorted()
    )
    references = tuple(
        PlainReference(kind=r.kind, value=r.value, path=paths.get(r.line or 0, ()), detail=r.detail)
        for r in ctx.deferred
    )
    if problems or any(t is None for t in checked):
        return PlainTriggers(triggers=None, problems=problems, references=references)
    return PlainTriggers(triggers=tuple(t for t in checked if t is not None), references=references)


_NO_NAMES = TreeNames(
    agents=frozenset(), runners=frozenset(), webhooks=frozenset(), suites=frozenset(), tasks={}
)


def _numbered(value: Any) -> tuple[Positions, dict[int, DocPath]]:
    """Positions that give every key and value of `value` a line of its own, and the path
    each line stands for: the rules report at positions, which are read back as paths."""
    paths: dict[int, DocPath] = {1: ()}
    positions = Positions(Position(1, 1))

    def walk(node: Any, path: DocPath) -> None:
        if isinstance(node, dict):
            items: list[tuple[str | int, Any]] = [(str(k), v) for k, v in node.items()]
        elif isinstance(node, list):
            items = list(enumerate(node))
        else:
            return
        for part, child in items:
            here = (*path, part)
            line = len(paths) + 1
            paths[line] = here
            positions.set_value(here, Position(line, 1))
            if isinstance(node, dict):
                positions.set_key(here, Position(line, 1))
            walk(child, here)

    walk(value, ())
    return positions, paths
