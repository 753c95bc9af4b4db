"""Properties over generated trees: a valid tree parses clean and compares equal to itself
re-read; a single key turned invalid gives a diagnostic at that file and line; nothing raises."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factory_format import comparable, parse_tree
from factory_format.diagnostics import Diagnostics
from factory_format.frontmatter import split_frontmatter
from factory_format.layout import FileKind, Placement, place
from factory_format.positions import DocPath
from factory_format.yaml_strict import load_yaml
from tests.examples import examples
from tests.factory_format.strategies import dump, markdown, trees

PROPERTY = settings(
    max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
INVALID = {"unexpected-key": [[]]}  # invalid wherever it is put: no key of the format takes it


@PROPERTY
@given(trees())
def test_generated_valid_trees_parse_clean(files: dict[str, str]) -> None:
    result = parse_tree(files)
    assert result.diagnostics == ()
    assert result.tree is not None
    again = parse_tree(dict(reversed(list(files.items()))))
    assert again.tree is not None
    assert comparable(again.tree) == comparable(result.tree)


def key_paths(value: Any, path: DocPath = ()) -> list[DocPath]:
    """Every mapping key of a document, as the path of its value."""
    found: list[DocPath] = []
    if isinstance(value, dict):
        for key, child in value.items():
            found.append((*path, key))
            found.extend(key_paths(child, (*path, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(key_paths(child, (*path, index)))
    return found


def replaced(value: Any, path: DocPath, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: replaced(v, rest, new) if k == head else v for k, v in value.items()}
    return [replaced(v, rest, new) if i == head else v for i, v in enumerate(value)]


def document(path: str, text: str) -> tuple[Any, str | None]:
    placement = place(path)
    assert isinstance(placement, Placement)
    if placement.kind.markdown:
        split = split_frontmatter(text)
        loaded = load_yaml(split.frontmatter, path, Diagnostics())
        return (loaded.value if loaded else None) or {}, split.body
    loaded = load_yaml(text, path, Diagnostics())
    assert loaded is not None
    return loaded.value, None


@PROPERTY
@given(trees(), st.data())
def test_one_invalid_value_is_reported_at_its_file_and_line(
    files: dict[str, str], data: st.DataObject
) -> None:
    candidates = [
        (path, key)
        for path in sorted(files)
        if place(path) and not _is_skill(path)
        for key in key_paths(document(path, files[path])[0])
    ]
    path, key = data.draw(st.sampled_from(candidates))
    value, body = document(path, files[path])
    mutated_value = replaced(value, key, INVALID)
    mutated = markdown(mutated_value, body) if body is not None else dump(mutated_value)

    result = parse_tree({**files, path: mutated})

    assert result.tree is None
    lines = _lines_of(path, mutated, key)
    hits = [d for d in result.diagnostics if d.path == path and d.line in lines]
    assert hits, (path, key, lines, result.diagnostics)


def _is_skill(path: str) -> bool:
    placement = place(path)
    return isinstance(placement, Placement) and placement.kind in (
        FileKind.SKILL,
        FileKind.AGENT_SKILL,
    )


def _lines_of(path: str, text: str, key: DocPath) -> range:
    """The lines the mutated key and its value take in the file."""
    offset = 1 if path.endswith(".md") else 0
    yaml_text = split_frontmatter(text).frontmatter if offset else text
    loaded = load_yaml(yaml_text, path, Diagnostics(), line_offset=offset)
    assert loaded is not None
    first = loaded.positions.key(key).line
    return range(first, first + 3)  # key, then `unexpected-key:` and `- []` below it


@settings(max_examples=examples(100), deadline=None)
@given(
    trees(),
    st.data(),
    st.one_of(st.text(max_size=300), st.binary(max_size=300).map(lambda b: b.decode("latin-1"))),
)
def test_any_text_in_any_file_gives_diagnostics_not_exceptions(
    files: dict[str, str], data: st.DataObject, text: str
) -> None:
    path = data.draw(st.sampled_from(sorted(files)))
    result = parse_tree({**files, path: text})
    assert result.ok or result.diagnostics
    for diagnostic in result.diagnostics:
        assert diagnostic.code.startswith("FF_") and diagnostic.message
