"""The catalogue of providers, events and filter keys, and each trigger checked against it."""

from __future__ import annotations

import re
from typing import get_args

import pytest

from factory_format.schemas import schema_document
from factory_format.triggers import (
    CATALOGUE,
    WEBHOOK_UID_PATTERN,
    WORK_ITEM_STAGES,
    event_spec,
    provider_spec,
)
from gateway.kernel.ids import new_id
from gateway.platform.tasks.models import TaskStage
from gateway.platform.work_items.models import WorkItemStage
from gateway.platform.work_items.stages import STAGE_OF_STATE
from tests.factory_format.support import parse_with, trigger, where

UID = "wh_0123456789abcdef0123456789abcdef"
UUID = "3f2b9a52-8c1e-4b7a-9d0e-1a2b3c4d5e6f"


def test_the_catalogue_is_consistent() -> None:
    providers = [p.name for p in CATALOGUE]
    assert providers == [
        "github",
        "gitlab",
        "linear",
        "jira",
        "slack",
        "teams",
        "schedule",
        "factory",
        "webhook",
    ]
    for provider in CATALOGUE:
        events = provider.event_names()
        assert len(events) == len(set(events)), provider.name
        for spec in provider.events:
            assert spec.provider == provider.name and spec.keys, spec.event
            names = [k.name for k in spec.keys]
            assert len(names) == len(set(names))
            for alias in spec.aliases:
                assert alias.canonical in names and alias.name not in names
            for key in spec.keys:
                if key.pattern:
                    re.compile(key.pattern)
    assert sum(len(p.events) for p in CATALOGUE) == 44


def test_look_ups() -> None:
    spec = event_spec("github", "pull_request_opened")
    assert spec is not None and spec.key("pr_numbers") is not None
    assert spec.key("pr_numbers").value_type == "integer"  # type: ignore[union-attr]
    assert [a.name for a in spec.aliases] == ["baseBranches", "prNumbers"]
    push = event_spec("github", "push")
    assert push is not None and push.aliases == ()  # no base_branches, so no baseBranches
    comment = event_spec("linear", "comment_created")
    assert comment is not None and {a.name for a in comment.aliases} == {
        "teams",
        "projects",
        "states",
        "issues",
    }
    issue = event_spec("linear", "issue_created")
    assert issue is not None and issue.alias("issues") is None  # issue_ids: comments only
    assert event_spec("github", "nope") is None and event_spec("azure", "push") is None
    assert provider_spec("webhook") is not None and provider_spec("bitbucket") is None


def test_the_catalogue_agrees_with_this_server_and_the_schema() -> None:
    assert get_args(TaskStage) == WORK_ITEM_STAGES
    assert get_args(WorkItemStage) == WORK_ITEM_STAGES  # what `stages` filters name
    assert set(STAGE_OF_STATE.values()) <= set(WORK_ITEM_STAGES)
    assert re.match(WEBHOOK_UID_PATTERN, new_id("wh"))
    schema = schema_document("v1alpha1", "automation.schema.json")
    assert schema is not None
    provider_enum = schema["$defs"]["trigger"]["properties"]["provider"]["enum"]
    assert provider_enum == [p.name for p in CATALOGUE]


GOOD = [
    ("github", "push", "filter:\n  repos: [acme/api]\n  branches: [main, refs/heads/dev]"),
    ("github", "pull_request_opened", "filter:\n  pr_numbers: [12, 7]\n  baseBranches: [main]"),
    ("github", "pull_request_opened", "filter:\n  labels: {not_in: [wip]}\n  paths: ['src/**']"),
    ("github", "pull_request_review_submitted", "filter:\n  review_states: [approved]"),
    ("github", "workflow_run_completed", "filter:\n  workflows: [CI]\n  conclusions: [failure]"),
    ("github", "check_run_rerequested", "filter:\n  repos: [a/b]"),
    ("gitlab", "merge_request", "filter:\n  actions: [open]\n  base_branches: [main]"),
    ("gitlab", "bot_mentioned", "filter:\n  mentioned: [factory-bot]"),
    (
        "linear",
        "issue_labeled",
        f"filter:\n  teams: [Platform]\n  state_ids: [{UUID}]",
    ),
    ("linear", "comment_created", "filter:\n  issues: [ENG-12]"),
    ("linear", "agent_session_created", "filter:\n  keywords: [deploy]"),
    ("jira", "status_changed", "filter:\n  project_keys: [ENG]\n  status_ids: ['10001']"),
    ("slack", "message_im", "filter:\n  channel_ids: [C0123ABCD]\n  users: [ana]"),
    ("slack", "reaction_added", "filter:\n  emojis: [ticket]\n  itemUsers: [bob]"),
    (
        "teams",
        "message_posted",
        f"filter:\n  team_ids: [{UUID}]\n  channel_ids: ['19:abc@thread.tacv2']",
    ),
    ("schedule", "cron_fired", "schedule: {name: nightly, cron: '0 3 * * *'}"),
    ("schedule", "cron_fired", "filter:\n  schedule_ids: {in: [sched_1]}"),
    ("factory", "work_item_stage_changed", "filter:\n  stages: [IN_REVIEW, DONE]"),
    ("webhook", "received", f"filter:\n  webhook_ids: [{UID}]"),
    ("webhook", "received", f"filter:\n  webhook_ids: {{in: [{UID}]}}\n  payload: {{a: [1]}}"),
    ("slack", "app_mention", "filter:\n  channels: null\n  keywords: {}"),
]


@pytest.mark.parametrize(("provider", "event", "extra"), GOOD)
def test_valid_triggers(provider: str, event: str, extra: str) -> None:
    result = parse_with(trigger(provider, event, extra))
    assert result.diagnostics == ()


BAD = [
    # (provider, event, extra, (line, column, code), words in the message)
    ("github", "pr_opened", "", (4, 12, "FF_INVALID_TRIGGER"), "pull_request_opened"),
    ("gitub", "push", "", (3, 15, "FF_INVALID_TRIGGER"), "github"),
    ("azure_devops", "push", "", (3, 15, "FF_INVALID_TRIGGER"), "one of"),
    ("github", "push", "filter:\n  labels: [x]", (6, 7, "FF_INVALID_FILTER"), "repos, branches"),
    (
        "github",
        "push",
        "filter:\n  repos: [api-service]",
        (6, 15, "FF_INVALID_FILTER"),
        "owner/name",
    ),
    (
        "github",
        "pull_request_opened",
        "filter:\n  pr_numbers: ['12']",
        (6, 20, "FF_INVALID_FILTER"),
        "integers",
    ),
    (
        "github",
        "pull_request_opened",
        "filter:\n  pr_numbers: [0]",
        (6, 20, "FF_INVALID_FILTER"),
        "positive",
    ),
    (
        "github",
        "pull_request_opened",
        "filter:\n  base_branches: [main]\n  baseBranches: [dev]",
        (7, 7, "FF_INVALID_FILTER"),
        "declare one",
    ),
    (
        "github",
        "issue_labeled",
        "filter:\n  labels: {in: [a, b], not_in: [b]}",
        (6, 37, "FF_INVALID_FILTER"),
        "both",
    ),
    ("github", "issue_labeled", "filter:\n  labels: [true]", (6, 16, "FF_INVALID_FILTER"), "quote"),
    ("github", "issue_labeled", "filter:\n  labels: wip", (6, 15, "FF_INVALID_FILTER"), "list"),
    (
        "github",
        "issue_labeled",
        "filter:\n  labels: {any: [a]}",
        (6, 16, "FF_INVALID_FILTER"),
        "operator",
    ),
    (
        "linear",
        "issue_created",
        "filter:\n  teams: {in: [Platform]}",
        (6, 14, "FF_INVALID_FILTER"),
        "plain list of names",
    ),
    (
        "linear",
        "issue_created",
        "filter:\n  team_ids: [Platform]",
        (6, 18, "FF_INVALID_FILTER"),
        "UUID",
    ),
    (
        "linear",
        "issue_created",
        "filter:\n  issues: [ENG-1]",
        (6, 7, "FF_INVALID_FILTER"),
        "no filter key",
    ),
    (
        "slack",
        "app_mention",
        "filter:\n  channel_ids: [general]",
        (6, 21, "FF_INVALID_FILTER"),
        "C0123ABCD",
    ),
    (
        "teams",
        "app_mention",
        f"filter:\n  team_ids: [{UUID}]",
        (5, 5, "FF_INVALID_FILTER"),
        "channel_ids",
    ),
    (
        "teams",
        "app_mention",
        f"filter:\n  team_ids: {{not_in: [{UUID}]}}\n  channel_ids: ['19:a@thread.tacv2']",
        (6, 26, "FF_INVALID_FILTER"),
        "only `in`",
    ),
    ("schedule", "cron_fired", "", (3, 5, "FF_INVALID_TRIGGER"), "schedule_ids"),
    (
        "schedule",
        "cron_fired",
        "filter:\n  schedule_ids: {not_in: [s]}",
        (6, 30, "FF_INVALID_FILTER"),
        "only `in`",
    ),
    (
        "schedule",
        "cron_fired",
        "schedule: {cron: '@daily'}\nfilter:\n  schedule_ids: [s]",
        (5, 5, "FF_INVALID_TRIGGER"),
        "not both",
    ),
    (
        "schedule",
        "cron_fired",
        "schedule: {cron: 'TZ=Europe/Paris 0 9 * * *'}",
        (5, 22, "FF_INVALID_SCHEDULE"),
        "UTC",
    ),
    ("schedule", "cron_fired", "schedule: {name: x}", (5, 5, "FF_INVALID_SCHEDULE"), "cron"),
    (
        "slack",
        "app_mention",
        "schedule: {cron: '@daily'}",
        (5, 5, "FF_INVALID_TRIGGER"),
        "cron_fired",
    ),
    (
        "factory",
        "work_item_stage_changed",
        "filter:\n  stages: [SHIPPED]",
        (6, 16, "FF_INVALID_FILTER"),
        "IN_REVIEW",
    ),
    ("webhook", "received", "", (3, 5, "FF_INVALID_FILTER"), "webhook_ids"),
    (
        "webhook",
        "received",
        "filter:\n  webhook_ids: []",
        (6, 7, "FF_INVALID_FILTER"),
        "at least one",
    ),
    (
        "webhook",
        "received",
        "filter:\n  webhook_ids: [github-events]",
        (6, 21, "FF_INVALID_FILTER"),
        "not file names",
    ),
    (
        "webhook",
        "received",
        f"filter:\n  webhook_ids: {{not_in: [{UID}]}}",
        (6, 29, "FF_INVALID_FILTER"),
        "only `in`",
    ),
    (
        "webhook",
        "received",
        f"filter:\n  webhook_ids: [{UID}]\n  payload: {{a: {{in: []}}}}",
        (7, 25, "FF_INVALID_FILTER"),
        "must not be empty",
    ),
    (
        "github",
        "push",
        "filter:\n  payload: {a: [1]}",
        (6, 7, "FF_INVALID_FILTER"),
        "no filter key",
    ),
    ("github", "push", "colour: red", (5, 5, "FF_INVALID_TRIGGER"), "colour"),
]


@pytest.mark.parametrize(("provider", "event", "extra", "at", "words"), BAD)
def test_invalid_triggers(
    provider: str, event: str, extra: str, at: tuple[int, int, str], words: str
) -> None:
    result = parse_with(trigger(provider, event, extra))
    assert where(result) == [("automations/job/automation.md", *at)]
    assert words in result.diagnostics[0].message


def test_a_webhook_file_name_in_webhook_ids_says_to_use_its_uid() -> None:
    files = {
        **trigger("webhook", "received", "filter:\n  webhook_ids: [github-events]"),
        "webhooks/github-events.yaml": "secretName: gh\n",
    }
    message = parse_with(files).diagnostics[0].message
    assert "file name of webhooks/github-events.yaml" in message and "wh_" in message


def test_aliases_are_rewritten_and_values_made_canonical() -> None:
    extra = "filter:\n  baseBranches: [main, dev, main]\n  prNumbers: {in: [9, 3], not_in: [4]}"
    result = parse_with(trigger("github", "pull_request_opened", extra))
    assert result.tree is not None
    [made] = result.tree.automations[0].triggers
    assert set(made.filter) == {"base_branches", "pr_numbers"}
    assert made.filter["base_branches"].in_ == ("dev", "main")
    assert (made.filter["pr_numbers"].in_, made.filter["pr_numbers"].not_in) == ((3, 9), (4,))


def test_null_and_empty_matchers_impose_nothing() -> None:
    extra = "filter:\n  repos: null\n  labels: []\n  authors: {}\n  assignees: {in: []}"
    result = parse_with(trigger("github", "issue_created", extra))
    assert result.tree is not None and result.tree.automations[0].triggers[0].filter == {}


def test_deferred_references_of_triggers() -> None:
    extra = f"filter:\n  webhook_ids: [{UID}]"
    files = {
        **trigger("webhook", "received", extra),
        "automations/b/automation.md": "---\ntriggers:\n  - provider: linear\n"
        "    event: issue_created\n    filter: {teams: [Platform, Mobile]}\n---\nGo\n",
    }
    result = parse_with(files)
    assert result.tree is not None
    refs = [
        (r.kind, r.value, r.path, r.line, r.column, r.detail)
        for r in result.tree.deferred_references
        if r.kind != "model"
    ]
    assert refs == [
        ("provider_name", "Platform", "automations/b/automation.md", 5, 22, "linear team_ids"),
        ("provider_name", "Mobile", "automations/b/automation.md", 5, 32, "linear team_ids"),
        ("webhook", UID, "automations/job/automation.md", 6, 21, "webhook webhook_ids"),
    ]


def test_schedule_names_are_unique_within_an_automation() -> None:
    lines = "triggers:\n" + "".join(
        f"  - provider: schedule\n    event: cron_fired\n    schedule: {{{s}cron: '@daily'}}\n"
        for s in ("", "name: a, ", "", "name: a, ")
    )
    result = parse_with({"automations/job/automation.md": f"---\n{lines}---\nGo\n"})
    assert where(result) == [
        ("automations/job/automation.md", 11, 5, "FF_DUPLICATE_VALUE"),
        ("automations/job/automation.md", 14, 5, "FF_DUPLICATE_VALUE"),
    ]
    assert "without a `name`" in result.diagnostics[0].message
