"""Every event the normalizers emit is a (provider, event) of factory-format.md §4 and carries
exactly its filter keys (less the keys its payloads cannot tell, NOT_IN_PAYLOAD), in the
comparison form of values.py; and every such event of the five providers is emitted by some
real payload.

LOCAL_CATALOGUE is this test's own copy of §4's table. When the shared catalogue of the
`factory_format` package is on main, replace it with that catalogue (the providers ->
events -> filter keys table there) and delete the copy: the test must check the normalizers
against the one catalogue apply validates filters with.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from factory_format.triggers import event_spec
from gateway.webhook_gateway.providers import TriggerEvent, normalize, not_in_payload
from gateway.webhook_gateway.providers.values import KEYWORDS, NAMES, form_of

from .conftest import GithubExamples, fixtures
from .github_variants import variants

_PR = ("repos", "base_branches", "pr_numbers", "paths", "assignees", "authors", "labels")
_LINEAR_ISSUE = (
    "team_ids",
    "project_ids",
    "labels",
    "state_ids",
    "assignee_ids",
    "mentioned_user_ids",
    "creator_ids",
)
_SLACK_MESSAGE = ("channel_ids", "user_ids", "keywords")

# TODO(factory-format): switch to the shared catalogue of factory_format once merged
LOCAL_CATALOGUE: dict[tuple[str, str], frozenset[str]] = {
    key: frozenset(keys)
    for key, keys in {
        ("github", "push"): ("repos", "branches", "paths"),
        ("github", "issue_created"): ("repos", "labels", "assignees", "authors"),
        ("github", "issue_labeled"): ("repos", "labels", "assignees", "authors"),
        ("github", "pull_request_opened"): _PR,
        ("github", "pull_request_ready"): _PR,
        ("github", "pull_request_closed"): _PR,
        ("github", "pull_request_merged"): _PR,
        ("github", "pull_request_labeled"): _PR,
        ("github", "pull_request_synchronized"): _PR,
        ("github", "pull_request_reopened"): _PR,
        ("github", "issue_mentioned"): ("repos", "mentioned", "labels"),
        ("github", "pull_request_mentioned"): ("repos", "mentioned", "labels"),
        ("github", "issue_assigned"): ("repos", "assignees", "labels"),
        ("github", "pull_request_assigned"): ("repos", "assignees", "labels"),
        ("github", "pull_request_review_requested"): ("repos", "reviewers", "reviewer_teams"),
        ("github", "pull_request_review_submitted"): (
            "repos",
            "mentioned",
            "labels",
            "review_states",
        ),
        ("github", "check_suite_completed"): (
            "repos",
            "conclusions",
            "branches",
            "labels",
            "authors",
        ),
        ("github", "workflow_run_completed"): (
            "repos",
            "conclusions",
            "branches",
            "workflows",
            "labels",
            "authors",
        ),
        ("github", "check_run_rerequested"): ("repos",),
        ("github", "check_suite_rerequested"): ("repos",),
        ("gitlab", "merge_request"): ("repos", "actions", "base_branches"),
        ("gitlab", "bot_mentioned"): ("repos",),
        ("linear", "issue_created"): _LINEAR_ISSUE,
        ("linear", "issue_labeled"): _LINEAR_ISSUE,
        ("linear", "issue_state_changed"): _LINEAR_ISSUE,
        ("linear", "issue_assigned"): _LINEAR_ISSUE,
        ("linear", "comment_created"): (
            "team_ids",
            "project_ids",
            "labels",
            "state_ids",
            "issue_ids",
            "mentioned_user_ids",
            "creator_ids",
        ),
        ("linear", "agent_session_created"): ("team_ids", "creator_ids", "keywords"),
        ("jira", "issue_created"): ("project_keys", "labels"),
        ("jira", "issue_labeled"): ("project_keys", "labels"),
        ("jira", "status_changed"): ("project_keys", "status_ids"),
        ("jira", "agent_session_created"): ("project_keys", "labels", "keywords"),
        ("slack", "app_mention"): _SLACK_MESSAGE,
        ("slack", "message_dm"): _SLACK_MESSAGE,
        ("slack", "message_im"): _SLACK_MESSAGE,
        ("slack", "message_mpim"): _SLACK_MESSAGE,
        ("slack", "message_posted"): _SLACK_MESSAGE,
        ("slack", "reaction_added"): (
            "channel_ids",
            "user_ids",
            "emojis",
            "keywords",
            "item_user_ids",
        ),
        ("slack", "member_joined_channel"): ("channel_ids", "user_ids"),
    }.items()
}

# the connection's own account, for the events that need it (GitLab, Jira)
BOTS = {"gitlab": "warp-agent", "jira": "5b10ac8d82e05b22cc7d4ef5"}


def _mentioning_bot(provider: str, payload: Any) -> Any:
    """The GitLab note fixtures, now naming the bot (no published sample does)."""
    if provider == "gitlab" and payload.get("object_kind") == "note":
        payload = copy.deepcopy(payload)
        payload["object_attributes"]["note"] = "@warp-agent take a look"
    return payload


def every_event(github_examples: GithubExamples) -> Iterator[TriggerEvent]:
    for kind, examples in github_examples.items():
        for payload in examples:
            yield from normalize("github", {"x-github-event": kind}, payload)
    for kind, payload in variants(github_examples):
        yield from normalize("github", {"x-github-event": kind}, payload)
    for provider in ("gitlab", "slack", "linear", "jira"):
        for payload in fixtures(provider).values():
            payload = _mentioning_bot(provider, payload)
            yield from normalize(provider, {}, payload, BOTS.get(provider))


def test_emitted_events_carry_the_catalogue_keys(github_examples: GithubExamples) -> None:
    for event in every_event(github_examples):
        keys = LOCAL_CATALOGUE.get((event.provider, event.event))
        assert keys is not None, f"{event.provider}/{event.event} is not in §4"
        emitted = {key for key in event.values if not key.endswith(NAMES)}
        assert emitted <= keys, (event.event, emitted - keys)
        # names beside ids, only for the keys a by-name alias (Linear `teams`) is written for
        named = {key.removesuffix(NAMES) for key in event.values if key.endswith(NAMES)}
        spec = event_spec(event.provider, event.event)
        assert spec is not None
        assert named <= {alias.canonical for alias in spec.aliases if alias.by_name}, named
        untold = not_in_payload(event.provider, event.event)
        assert untold <= keys
        assert keys - emitted <= untold, (event.event, keys - emitted - untold)


def test_values_are_in_comparison_form(github_examples: GithubExamples) -> None:
    for event in every_event(github_examples):
        for key, values in event.values.items():
            assert isinstance(values, list)
            if key == "pr_numbers":
                assert all(type(v) is int for v in values)
                continue
            form = form_of(event.provider, key)
            for value in values:
                assert isinstance(value, str)
                assert form(value) == value, (event.event, key, value)
            if key == KEYWORDS:
                assert len(values) <= 1


def test_every_catalogue_event_is_emitted_by_a_real_payload(
    github_examples: GithubExamples,
) -> None:
    emitted = {(event.provider, event.event) for event in every_event(github_examples)}
    assert set(LOCAL_CATALOGUE) - emitted == set()
