"""Plain YAML only, each refusal at its line and column; Markdown frontmatter fences."""

from __future__ import annotations

import pytest

from factory_format.diagnostics import Diagnostics
from factory_format.yaml_strict import load_yaml
from tests.factory_format.support import parse_with, where


def load(text: str) -> tuple[object, list[tuple[int | None, int | None, str]]]:
    sink = Diagnostics()
    loaded = load_yaml(text, "f.yaml", sink)
    return (
        loaded.value if loaded else None,
        [(d.line, d.column, d.code) for d in sink.sorted()],
    )


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        ("a: &x 1\nb: *x\n", [(1, 4, "FF_ANCHOR"), (2, 4, "FF_ALIAS")]),
        ("a: !!str 1\n", [(1, 4, "FF_TAG")]),
        ("a: !custom {b: 1}\n", [(1, 4, "FF_TAG")]),
        ("base: {x: 1}\nother:\n  <<: {y: 2}\n", [(3, 3, "FF_MERGE_KEY")]),
        ("a: 1\nb: 2\na: 3\n", [(3, 1, "FF_DUPLICATE_KEY")]),
        ("x:\n  a: 1\n  'a': 2\n", [(3, 3, "FF_DUPLICATE_KEY")]),
        ("? [a, b]\n: 1\n", [(1, 3, "FF_NON_SCALAR_KEY")]),
        ("? {a: 1}\n: 1\n", [(1, 3, "FF_NON_SCALAR_KEY")]),
        ("a: 1\n---\nb: 2\n", [(2, 1, "FF_MULTIPLE_DOCUMENTS")]),
        ("a: [1, 2\nb: 3\n", [(2, 2, "FF_YAML_SYNTAX")]),
        ("a:\tb\n  c: d\n", [(2, 4, "FF_YAML_SYNTAX")]),
        ("a: '\x07'\n", [(1, 5, "FF_YAML_SYNTAX")]),
        ("[" * 70 + "]" * 70, [(1, 66, "FF_INVALID_DOCUMENT")]),
    ],
)
def test_refused_constructs_are_reported_where_they_are(
    text: str, problems: list[tuple[int, int, str]]
) -> None:
    value, found = load(text)
    assert value is None
    assert found == problems


def test_every_problem_of_a_file_is_reported() -> None:
    _, found = load("a: &one 1\nb: *one\nc: !!int 3\nd: *one\n")
    assert found == [(1, 4, "FF_ANCHOR"), (2, 4, "FF_ALIAS"), (3, 4, "FF_TAG"), (4, 4, "FF_ALIAS")]


def test_an_alias_bomb_is_refused_without_being_expanded() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]" for i in range(8)
    ]
    value, found = load("\n".join(lines) + "\n")
    assert value is None and {code for _l, _c, code in found} == {"FF_ANCHOR", "FF_ALIAS"}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("a: yes\nb: on\nc: No\n", {"a": "yes", "b": "on", "c": "No"}),
        ("d: 2024-01-01\nv: 1.0.2\n", {"d": "2024-01-01", "v": "1.0.2"}),
        ("t: true\nf: False\nn: ~\ne:\n", {"t": True, "f": False, "n": None, "e": None}),
        ("i: 42\nh: 0x1f\no: 0o17\nx: 1_000\n", {"i": 42, "h": 31, "o": 15, "x": "1_000"}),
        ("f: 1.5\ng: -2e3\n", {"f": 1.5, "g": -2000.0}),
        ("q: '26'\nr: \"true\"\ns: |\n  a\n  b\n", {"q": "26", "r": "true", "s": "a\nb\n"}),
        ("<<x: 1\n'<<': 2\n", {"<<x": 1, "<<": 2}),
        ("", None),
        ("# only a comment\n", None),
    ],
)
def test_plain_scalars_resolve_by_the_yaml_1_2_core_schema(text: str, value: object) -> None:
    assert load(text) == (value, [])


def test_a_multi_document_runner_file_is_refused_in_a_tree() -> None:
    result = parse_with({"runners/small.yaml": "platform: {linux: {dockerImage: u}}\n---\n{}\n"})
    assert where(result) == [("runners/small.yaml", 2, 1, "FF_MULTIPLE_DOCUMENTS")]


def test_frontmatter_yaml_lines_count_from_the_file() -> None:
    result = parse_with({"agents/boss/agent.md": "---\nagentType: FOREMAN\nx: &a 1\n---\nHi\n"})
    assert where(result) == [("agents/boss/agent.md", 3, 4, "FF_ANCHOR")]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("agentType: FOREMAN\n", 1),  # no opening fence
        ("\n---\nagentType: FOREMAN\n---\n", 1),  # a blank line before it
        ("--- \nagentType: FOREMAN\n", 1),  # never closed
        ("---\nagentType: FOREMAN\n--\nbody\n", 1),
    ],
)
def test_malformed_frontmatter(text: str, line: int) -> None:
    result = parse_with(
        {"agents/boss/agent.md": text, "agents/other/agent.md": "---\nagentType: FOREMAN\n---\n"}
    )
    assert where(result) == [("agents/boss/agent.md", line, 1, "FF_MALFORMED_FRONTMATTER")]


def test_empty_frontmatter_is_an_agent_with_every_default() -> None:
    result = parse_with({"agents/helper/agent.md": "---\n---\n"})
    assert result.tree is not None
    helper = next(a for a in result.tree.agents if a.name == "helper")
    assert (helper.agent_type, helper.prompt, helper.effective.harness.model) == (
        "CUSTOM",
        "",
        "auto",
    )


def test_the_body_is_kept_as_written_and_crlf_reads_as_lf() -> None:
    body = "# Title\r\n\r\n  indented line\r\ntrailing spaces  \r\n"
    result = parse_with({"agents/boss/agent.md": "---\r\nagentType: FOREMAN\r\n---\r\n" + body})
    assert result.tree is not None
    assert result.tree.agents[0].prompt == body.replace("\r\n", "\n")


@pytest.mark.parametrize(
    ("path", "text", "problem"),
    [
        ("factory.yaml", "", (1, 1, "FF_INVALID_DOCUMENT")),
        ("factory.yaml", "- a\n- b\n", (1, 1, "FF_INVALID_DOCUMENT")),
        ("runners/small.yaml", "just text\n", (1, 1, "FF_INVALID_DOCUMENT")),
        ("agents/boss/agent.md", "---\n- FOREMAN\n---\n", (2, 1, "FF_INVALID_DOCUMENT")),
    ],
)
def test_a_document_whose_root_is_not_a_mapping(
    path: str, text: str, problem: tuple[int, int, str]
) -> None:
    result = parse_with({path: text})
    assert (path, *problem) in where(result)
    assert result.tree is None


def test_a_numeral_too_long_for_a_number_stays_text() -> None:
    digits = "9" * 5000  # int() refuses more than 4300 digits
    assert load(f"a: {digits}\nb: -{digits}\n") == ({"a": digits, "b": f"-{digits}"}, [])
    result = parse_with(
        {
            "runners/small.yaml": f"instanceShape: {{vcpus: {digits}, memoryGb: 8}}\n"
            "platform: {linux: {dockerImage: u}}\n"
        }
    )
    assert where(result) == [("runners/small.yaml", 1, 24, "FF_INVALID_TYPE")]


def test_a_posted_file_that_is_not_text() -> None:
    from factory_format import parse_tree
    from tests.factory_format.support import MINIMAL

    result = parse_tree({**MINIMAL, "runners/x.yaml": b"x: 1"})  # type: ignore[dict-item]
    assert where(result) == [("runners/x.yaml", None, None, "FF_INVALID_DOCUMENT")]


def test_a_file_of_many_problems_is_reported_by_its_first_twenty() -> None:
    """85,000 aliases, or 40,000 duplicate keys, in one file: 20 diagnostics and a count of
    the rest (it was one diagnostic each: a 106 MB answer)."""
    from factory_format import parse_tree
    from factory_format.diagnostics import MAX_FILE_PROBLEMS
    from tests.factory_format.support import MINIMAL

    aliases = "x: &x 1\ny: [" + ",".join(["*x"] * 85_000) + "]\n"
    duplicates = "k: 1\n" * 40_000
    for text, code in ((aliases, "FF_ALIAS"), (duplicates, "FF_DUPLICATE_KEY")):
        result = parse_tree({**MINIMAL, "runners/r.yaml": text})
        found = [d for d in result.diagnostics if d.path == "runners/r.yaml"]
        assert len(found) == MAX_FILE_PROBLEMS and result.omitted >= 1
        assert {d.code for d in found} <= {code, "FF_ANCHOR"}
        assert [d.line for d in found] == sorted(d.line for d in found)  # the first ones


def test_duplicate_and_other_key_problems_are_found_before_anything_is_built() -> None:
    """The event scan knows the keys: a duplicate beside an alias is reported with it."""
    _value, problems = load("a: &x 1\nb: *x\na: 2\n<<: {c: 1}\n")
    assert problems == [
        (1, 4, "FF_ANCHOR"),
        (2, 4, "FF_ALIAS"),
        (3, 1, "FF_DUPLICATE_KEY"),
        (4, 1, "FF_MERGE_KEY"),
    ]


def test_more_values_than_a_file_or_a_tree_may_hold_are_refused_unbuilt() -> None:
    from factory_format import parse_tree
    from factory_format.yaml_strict import MAX_FILE_NODES, MAX_TREE_NODES
    from tests.factory_format.support import MINIMAL

    def runner(values: int) -> str:  # the mapping, its key, the list and its items
        return "y: [" + ",".join(["1"] * (values - 3)) + "]\n"

    at_limit = parse_tree({**MINIMAL, "runners/r.yaml": runner(MAX_FILE_NODES)})
    assert "FF_FILE_TOO_LARGE" not in {d.code for d in at_limit.diagnostics}
    over = parse_tree({**MINIMAL, "runners/r.yaml": runner(MAX_FILE_NODES + 1)})
    (problem,) = [d for d in over.diagnostics if d.path == "runners/r.yaml"]
    assert (
        problem.code == "FF_FILE_TOO_LARGE" and f"{MAX_FILE_NODES} YAML values" in problem.message
    )
    files = MAX_TREE_NODES // 9_000 + 1
    tree = parse_tree({**MINIMAL, **{f"runners/r{i}.yaml": runner(9_000) for i in range(files)}})
    codes = [d.code for d in tree.diagnostics if d.path.startswith("runners/r")]
    assert "FF_TREE_TOO_LARGE" in codes and "FF_FILE_TOO_LARGE" not in codes
