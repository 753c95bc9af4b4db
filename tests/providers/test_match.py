"""Trigger filters: the grammar and value rules of factory-format.md §4, and the compiled
matcher against the reference semantics (``failing_key``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.webhook_gateway.providers import (
    EventValues,
    TriggerEvent,
    TriggerFilterError,
    compile_trigger_filter,
    failing_key,
    parse_trigger_filter,
    reaches,
    repository_key,
)
from gateway.webhook_gateway.providers.values import form_of
from tests.examples import at_least, examples


def event(provider: str = "github", name: str = "issue_labeled", **values: Any) -> TriggerEvent:
    return TriggerEvent(provider, name, values)


def matches(filter_: Any, ev: TriggerEvent) -> bool:
    matcher = compile_trigger_filter(ev.provider, filter_)
    result = matcher(ev)
    assert (failing_key(matcher.conditions, ev) is None) is result
    return result


BUG = event(labels=["bug", "p1"], repos=["acme/api"], assignees=[], authors=["ana"])


@pytest.mark.parametrize("empty", [None, {}, {"labels": None}, {"labels": []}, {"labels": {}}])
def test_empty_matchers_impose_nothing(empty: Any) -> None:
    assert matches(empty, BUG)
    assert matches(empty, event(labels=[]))


def test_bare_list_is_any_of() -> None:
    assert matches({"labels": ["bug"]}, BUG)
    assert matches({"labels": ["docs", "p1"]}, BUG)
    assert not matches({"labels": ["docs"]}, BUG)
    assert matches({"labels": {"in": ["docs", "bug"]}}, BUG)


def test_not_in_matches_when_no_value_is_listed() -> None:
    assert matches({"labels": {"not_in": ["wip"]}}, BUG)
    assert not matches({"labels": {"not_in": ["p1"]}}, BUG)
    assert matches({"labels": {"not_in": ["wip"]}}, event(labels=[]))
    assert not matches({"labels": {"in": ["bug"], "not_in": ["bug"]}}, BUG)  # both: rejected
    assert not matches({"labels": {"in": ["bug"], "not_in": ["p1"]}}, BUG)


def test_keys_are_anded_and_omitted_keys_match_everything() -> None:
    assert matches({"labels": ["bug"], "repos": ["acme/api"]}, BUG)
    assert not matches({"labels": ["bug"], "repos": ["acme/web"]}, BUG)
    assert matches({"repos": ["acme/api"]}, BUG)


def test_a_key_the_event_does_not_carry_never_matches() -> None:
    pr = event(name="pull_request_opened", labels=[])  # paths: not in GitHub's PR payloads
    assert not matches({"paths": ["docs/a.md"]}, pr)
    assert not matches({"paths": {"not_in": ["docs/a.md"]}}, pr)


def test_github_logins_and_repositories_ignore_case() -> None:
    assert matches({"repos": ["ACME/Api"], "authors": ["Ana"]}, BUG)


def test_branches_with_or_without_refs_heads() -> None:
    push = event(name="push", branches=["main"], repos=["acme/api"], paths=[])
    assert matches({"branches": ["refs/heads/main"]}, push)
    assert matches({"branches": ["main"]}, push)
    assert not matches({"branches": {"not_in": ["refs/heads/main"]}}, push)
    pr = event(name="pull_request_opened", base_branches=["main"])
    assert matches({"base_branches": ["refs/heads/main"]}, pr)


def test_pr_numbers_are_integers() -> None:
    pr = event(name="pull_request_opened", pr_numbers=[12])
    assert matches({"pr_numbers": [12, 13]}, pr)
    assert not matches({"pr_numbers": {"not_in": [12]}}, pr)
    with pytest.raises(TriggerFilterError, match=r"\$\.pr_numbers\[0\]: pr_numbers takes integers"):
        compile_trigger_filter("github", {"pr_numbers": ["12"]})
    with pytest.raises(TriggerFilterError):
        compile_trigger_filter("github", {"pr_numbers": [True]})


def test_keywords_are_case_insensitive_substrings() -> None:
    message = event("slack", "message_posted", channel_ids=["C1"], keywords=["please deploy prod"])
    assert matches({"keywords": ["DEPLOY"]}, message)
    assert matches({"keywords": ["rollback", "Prod"]}, message)
    assert not matches({"keywords": ["rollback"]}, message)
    assert not matches({"keywords": {"not_in": ["please"]}}, message)
    assert matches({"keywords": {"in": ["deploy"], "not_in": ["staging"]}}, message)
    silent = event("slack", "message_posted", keywords=[])
    assert not matches({"keywords": ["deploy"]}, silent)
    assert matches({"keywords": {"not_in": ["deploy"]}}, silent)
    reaction = event("slack", "reaction_added", emojis=["eyes"])  # no text in the payload
    assert not matches({"keywords": ["deploy"]}, reaction)


def test_emojis_without_colons_or_skin_tones() -> None:
    reaction = event("slack", "reaction_added", emojis=["+1"])
    assert matches({"emojis": [":+1::skin-tone-2:"]}, reaction)
    assert matches({"emojis": [":+1:"]}, reaction)
    assert matches({"emojis": ["+1"]}, reaction)
    assert not matches({"emojis": [":eyes:"]}, reaction)


def test_linear_labels_ignore_case_jira_labels_do_not() -> None:
    linear = event("linear", "issue_labeled", labels=["bug"])
    assert matches({"labels": ["Bug"]}, linear)
    jira = event("jira", "issue_labeled", labels=["Bug"])
    assert matches({"labels": ["Bug"]}, jira)
    assert not matches({"labels": ["bug"]}, jira)
    github = event("github", "issue_labeled", labels=["Bug"])
    assert not matches({"labels": ["bug"]}, github)


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (["labels"], "$"),
        ({"labels": "bug"}, "$.labels"),
        ({"labels": {"any": ["bug"]}}, "$.labels.any"),
        ({"labels": {"in": "bug"}}, "$.labels.in"),
        ({"labels": [1]}, "$.labels[0]"),
        ({"schedule_ids": {"not_in": ["s"]}}, "$.schedule_ids.not_in"),
        ({"labels": ["x"] * 101}, "$.labels"),
    ],
)
def test_invalid_filters(raw: Any, path: str) -> None:
    with pytest.raises(TriggerFilterError) as caught:
        parse_trigger_filter("github", raw)
    assert caught.value.path == path


def test_mentioned_has_no_effect_on_gitlab_bot_mentioned() -> None:
    mentioned = event("gitlab", "bot_mentioned", repos=["group/app"])
    matcher = compile_trigger_filter("gitlab", {"mentioned": ["someone"]}, "bot_mentioned")
    assert matcher.conditions == ()
    assert matcher(mentioned)
    assert not compile_trigger_filter("gitlab", {"mentioned": ["someone"]})(mentioned)


def test_conditions_hold_values_in_comparison_form() -> None:
    (condition,) = parse_trigger_filter("github", {"branches": ["refs/heads/main", "main"]})
    assert condition.in_ == ("main",)
    assert condition.not_in is None


def test_reaches_only_factories_listing_the_repository() -> None:
    repos = {repository_key("Acme", "API")}
    assert reaches(BUG, repos)
    assert not reaches(BUG, {repository_key("acme", "web")})
    assert reaches(event("slack", "message_posted"), set())


# Property: the compiled matcher agrees with the reference semantics on random filters/events

KEYS = ["labels", "branches", "keywords", "pr_numbers", "emojis"]
STRINGS = ["bug", "Bug", "main", "refs/heads/main", ":+1:", "+1", "deploy prod", "prod", ""]
INTS = [1, 2, 3]


def _values_for(key: str) -> st.SearchStrategy[list[Any]]:
    return st.lists(st.sampled_from(INTS if key == "pr_numbers" else STRINGS), max_size=3)


@st.composite
def filters(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=3)):
        values = _values_for(key)
        out[key] = draw(
            st.one_of(
                st.none(),
                values,
                st.fixed_dictionaries({}, optional={"in": values, "not_in": values}),
            )
        )
    return out


@st.composite
def events(draw: st.DrawFn, provider: str) -> TriggerEvent:
    values: EventValues = {}
    for key in draw(st.lists(st.sampled_from(KEYS), unique=True)):
        raw = draw(_values_for(key))
        if key == "pr_numbers":
            values[key] = raw
            continue
        form = form_of(provider, key)  # events hold values in comparison form
        values[key] = [form(v) for v in raw]
    return TriggerEvent(provider, "any", values)


def test_compiled_matcher_agrees_with_reference() -> None:
    outcomes: Counter[bool] = Counter()

    @settings(
        max_examples=examples(600),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(
        st.sampled_from(["github", "slack", "linear"]).flatmap(
            lambda p: st.tuples(st.just(p), filters(), events(p))
        )
    )
    def check(case: tuple[str, dict[str, Any], TriggerEvent]) -> None:
        provider, raw, ev = case
        matcher = compile_trigger_filter(provider, raw)
        expected = failing_key(matcher.conditions, ev) is None
        assert matcher(ev) is expected
        if matcher.conditions:
            outcomes[expected] += 1

    check()
    total = outcomes[True] + outcomes[False]
    assert total > at_least(250)
    assert 0.1 < outcomes[True] / total < 0.9, outcomes  # the property is not vacuous


def test_by_name_filters_match_the_names_the_payload_carries() -> None:
    from gateway.webhook_gateway.providers import normalize
    from gateway.webhook_gateway.providers.values import names_key
    from tests.providers.conftest import fixture

    (created,) = normalize("linear", {}, fixture("linear", "issue_create"))
    teams = names_key("team_ids")
    assert matches({teams: ["Korosuke613"]}, created)  # a team's name, any case
    assert matches({teams: ["KOR"], names_key("state_ids"): ["backlog"]}, created)
    assert not matches({teams: ["Platform"]}, created)
    assert matches({teams: {"not_in": ["Platform"]}}, created)
    # no names in the payload (a Slack channel is an id only): no match, either way
    mention = event("slack", "app_mention", channel_ids=["C1"], user_ids=["U1"])
    assert not matches({names_key("channel_ids"): ["general"]}, mention)
    assert not matches({names_key("channel_ids"): {"not_in": ["general"]}}, mention)


def _push(*files: str) -> TriggerEvent:
    return event(name="push", branches=["main"], repos=["acme/api"], paths=list(files))


def test_paths_are_github_globs() -> None:
    # `*` stays within a directory, `**` crosses them (and `**/` may match none)
    assert matches({"paths": ["api/**"]}, _push("api/x.py"))
    assert matches({"paths": ["api/**"]}, _push("docs/x.md", "api/a/b/c.py"))
    assert not matches({"paths": ["api/**"]}, _push("docs/x.md"))
    assert not matches({"paths": ["api/*"]}, _push("api/a/b.py"))
    assert matches({"paths": ["*.py"]}, _push("setup.py"))
    assert not matches({"paths": ["*.py"]}, _push("src/setup.py"))
    assert matches({"paths": ["**/setup.py"]}, _push("setup.py"))
    assert matches({"paths": ["**.js"]}, _push("web/app/main.js"))
    # `?` makes the character before it optional, `+` repeats it (GitHub's meaning)
    assert matches({"paths": ["docs/*.mdx?"]}, _push("docs/a.md"))
    assert matches({"paths": ["docs/*.mdx?"]}, _push("docs/a.mdx"))
    assert matches({"paths": ["v1+.txt"]}, _push("v111.txt"))
    assert not matches({"paths": ["v1+.txt"]}, _push("v.txt"))
    assert matches({"paths": ["[ab].txt"]}, _push("b.txt"))
    assert not matches({"paths": ["[ab].txt"]}, _push("c.txt"))
    # a literal dot, not any character
    assert not matches({"paths": ["a.py"]}, _push("axpy"))


def test_path_exclusions_apply_in_order_and_not_in_is_paths_ignore() -> None:
    only_docs_md = {"paths": ["docs/**", "!docs/**/*.md"]}
    assert matches(only_docs_md, _push("docs/guide/x.png"))
    assert not matches(only_docs_md, _push("docs/guide/x.md"))
    again = {"paths": ["docs/**", "!docs/**/*.md", "docs/keep/*.md"]}
    assert matches(again, _push("docs/keep/x.md"))
    ignore_docs = {"paths": {"not_in": ["docs/**"]}}
    assert not matches(ignore_docs, _push("docs/a.md", "docs/b/c.md"))  # every file ignored
    assert matches(ignore_docs, _push("docs/a.md", "api/x.py"))
    assert matches(ignore_docs, _push())  # nothing to ignore


def test_malformed_path_patterns_name_their_place() -> None:
    with pytest.raises(
        TriggerFilterError, match=r"\$\.paths\[1\]: not a path pattern: .*not closed"
    ):
        compile_trigger_filter("github", {"paths": ["api/**", "[ab"]})
    with pytest.raises(TriggerFilterError, match=r"\$\.paths\.in\[0\]: .*follows no character"):
        compile_trigger_filter("github", {"paths": {"in": ["?x"]}})
