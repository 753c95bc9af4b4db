"""Properties of plan and apply over generated trees, through the HTTP API: a valid tree, once
applied, plans again as empty; a single key turned invalid is a 422 whose diagnostics name that
file and line; any text in any file is a 200 or a 422 (a 400 for a NUL character, as any body),
never a 500. SQLite and PostgreSQL."""

from __future__ import annotations

import base64

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from factory_format import parse_tree
from factory_format.layout import place
from tests.examples import examples
from tests.factory_format.strategies import dump, markdown, trees
from tests.factory_format.test_properties import (
    INVALID,
    _is_skill,
    _lines_of,
    document,
    key_paths,
    replaced,
)
from tests.platform.factory_files.support import post, set_secrets
from tests.support import World

PROPERTY = settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
# a value every scheme a generated webhook names can verify with
SIGNING = "whsec_" + base64.b64encode(b"p" * 32).decode()


def _server_references_exist(world: World, files: dict[str, str]) -> None:
    """What a generated tree names on the server: its secrets are made (as a user would);
    webhook UIDs and scheduled agents cannot be made with the ids it invented, so such trees
    are not drawn."""
    tree = parse_tree(files).tree
    assert tree is not None
    kinds = {ref.kind for ref in tree.deferred_references}
    assume("webhook" not in kinds and "schedule" not in kinds)
    secrets = {ref.value for ref in tree.deferred_references if ref.kind == "secret"}
    set_secrets(world, {name: SIGNING for name in secrets})


@PROPERTY
@given(files=trees())
def test_a_valid_tree_once_applied_plans_empty(world: World, files: dict[str, str]) -> None:
    _server_references_exist(world, files)
    applied = post(world, "apply", files)
    assert applied.status_code == 200, applied.json()
    again = post(world, "plan", files)
    assert again.status_code == 200, again.json()
    assert again.json()["changes"] == [], again.json()
    assert again.json()["factory_uid"] == applied.json()["factory_uid"]


@PROPERTY
@given(files=trees(), data=st.data())
def test_one_invalid_value_is_a_422_at_its_file_and_line(
    world: World, files: dict[str, str], data: st.DataObject
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

    response = post(world, "plan", {**files, path: mutated})

    assert response.status_code == 422, response.json()
    lines = _lines_of(path, mutated, key)
    hits = [d for d in response.json()["diagnostics"] if d["path"] == path and d["line"] in lines]
    assert hits, (path, key, lines, response.json())


@PROPERTY
@given(
    files=trees(),
    data=st.data(),
    text=st.one_of(
        st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))
    ),
)
def test_any_text_in_any_file_is_answered_never_a_500(
    world: World, files: dict[str, str], data: st.DataObject, text: str
) -> None:
    path = data.draw(st.sampled_from(sorted(files)))
    response = world.api("POST", "/factory-files/plan", json={"files": {**files, path: text}})
    if response.status_code == 400:  # every JSON body of the API refuses NUL characters
        assert "\x00" in text and "NUL" in response.json()["detail"]
    else:
        assert response.status_code in (200, 422), response.text
