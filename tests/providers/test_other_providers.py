"""Slack, GitLab, Linear and Jira: their documented samples normalize to the events
docs/providers.md says, with the values filters match on."""

from __future__ import annotations

import copy

from gateway.webhook_gateway.providers import delivery_id, normalize

from .conftest import fixture

NO_HEADERS: dict[str, str] = {}


def names(provider: str, payload: object, bot: str | None = None) -> list[str]:
    return [e.event for e in normalize(provider, NO_HEADERS, payload, bot)]


# Slack


def test_slack_app_mention() -> None:
    (event,) = normalize("slack", NO_HEADERS, fixture("slack", "app_mention"))
    assert event.event == "app_mention"
    assert event.repository is None
    assert event.values == {
        "channel_ids": ["C123ABC456"],
        "user_ids": ["U061F7AUR"],
        "keywords": ["<@u0lan0z89> is it everything a river should be?"],
    }


def test_slack_messages_by_channel_type() -> None:
    assert names("slack", fixture("slack", "message_channels")) == ["message_posted"]
    assert names("slack", fixture("slack", "message_groups")) == ["message_posted"]
    assert names("slack", fixture("slack", "message_im")) == ["message_dm", "message_im"]
    assert names("slack", fixture("slack", "message_mpim")) == ["message_dm", "message_mpim"]


def test_slack_message_values() -> None:
    dm, im = normalize("slack", NO_HEADERS, fixture("slack", "message_im"))
    assert dm.values is im.values
    assert dm.values == {
        "channel_ids": ["D024BE91L"],
        "user_ids": ["U2147483697"],
        "keywords": ["hello hello can you hear me?"],
    }


def test_slack_messages_that_are_not_posts_start_nothing() -> None:
    assert names("slack", fixture("slack", "channel_join_message")) == []
    edited = copy.deepcopy(fixture("slack", "message_channels"))
    edited["event"]["subtype"] = "message_changed"
    assert names("slack", edited) == []
    bot_post = copy.deepcopy(fixture("slack", "message_channels"))
    bot_post["event"]["subtype"] = "bot_message"
    assert names("slack", bot_post) == ["message_posted"]


def test_slack_own_messages_start_nothing() -> None:
    payload = fixture("slack", "message_channels")
    assert names("slack", payload, bot="U123ABC456") == []
    assert names("slack", payload, bot="UOTHERBOT") == ["message_posted"]


def test_slack_reaction() -> None:
    payload = copy.deepcopy(fixture("slack", "reaction_added"))
    (event,) = normalize("slack", NO_HEADERS, payload)
    assert event.values == {
        "channel_ids": ["C123ABC456"],
        "user_ids": ["U123ABC456"],
        "emojis": ["thumbsup"],
        "item_user_ids": ["U222222222"],
    }
    assert "keywords" not in event.values  # the reacted message's text is not in the payload
    payload["event"]["reaction"] = "+1::skin-tone-2"
    payload["event"].pop("item_user")  # messages of incoming webhooks have no item_user
    (event,) = normalize("slack", NO_HEADERS, payload)
    assert event.values["emojis"] == ["+1"]
    assert event.values["item_user_ids"] == []


def test_slack_member_joined() -> None:
    (event,) = normalize("slack", NO_HEADERS, fixture("slack", "member_joined_channel"))
    assert event.event == "member_joined_channel"
    assert event.values == {"channel_ids": ["C123ABC456"], "user_ids": ["W123ABC456"]}


def test_slack_handshake_and_identity() -> None:
    handshake = {
        "type": "url_verification",
        "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
    }
    assert names("slack", handshake) == []
    assert delivery_id("slack", NO_HEADERS, fixture("slack", "message_im")) == "Ev0PV52K21"
    assert delivery_id("slack", NO_HEADERS, handshake) is None


# GitLab


def test_gitlab_merge_request() -> None:
    (event,) = normalize("gitlab", NO_HEADERS, fixture("gitlab", "merge_request_open"))
    assert event.event == "merge_request"
    assert event.repository == "gitlabhq/gitlab-test"
    assert event.values == {
        "repos": ["gitlabhq/gitlab-test"],
        "actions": ["open"],
        "base_branches": ["master"],
    }


def test_gitlab_bot_mentioned_needs_the_bot() -> None:
    note = copy.deepcopy(fixture("gitlab", "note_merge_request"))
    assert names("gitlab", note) == []
    assert names("gitlab", note, bot="warp-agent") == []  # "This MR needs work."
    note["object_attributes"]["note"] = "@Warp-Agent please rebase. cc @root"
    assert names("gitlab", note) == []
    (event,) = normalize("gitlab", NO_HEADERS, note, "warp-agent")
    assert event.event == "bot_mentioned"
    assert event.values == {"repos": ["gitlab-org/gitlab-test"]}
    note["user"]["username"] = "warp-agent"
    assert names("gitlab", note, bot="warp-agent") == []  # its own reply


def test_gitlab_bot_mentioned_on_issues_and_new_merge_requests() -> None:
    issue_note = copy.deepcopy(fixture("gitlab", "note_issue"))
    issue_note["object_attributes"]["note"] = "@warp-agent triage this"
    assert names("gitlab", issue_note, bot="warp-agent") == ["bot_mentioned"]
    issue_note["object_attributes"]["action"] = "update"
    assert names("gitlab", issue_note, bot="warp-agent") == []
    issue = copy.deepcopy(fixture("gitlab", "issue_open"))
    assert names("gitlab", issue, bot="warp-agent") == []
    issue["object_attributes"]["description"] = "Over to @warp-agent."
    assert names("gitlab", issue, bot="warp-agent") == ["bot_mentioned"]
    mr = copy.deepcopy(fixture("gitlab", "merge_request_open"))
    mr["object_attributes"]["description"] = "@warp-agent review"
    assert names("gitlab", mr, bot="warp-agent") == ["merge_request", "bot_mentioned"]


def test_gitlab_identity() -> None:
    assert delivery_id("gitlab", {"x-gitlab-event-uuid": "u-1"}, {}) == "u-1"
    both = {"x-gitlab-event-uuid": "u-1", "idempotency-key": "k-1"}
    assert delivery_id("gitlab", both, {}) == "k-1"


# Linear


def test_linear_issue_created() -> None:
    (event,) = normalize("linear", NO_HEADERS, fixture("linear", "issue_create"))
    assert event.event == "issue_created"
    assert event.values == {
        "team_ids": ["eeaa0cbd-xxxx-xxxx-xxxx-1c701c3485f1"],
        "project_ids": [],
        "labels": [],
        "state_ids": ["c02edc3a-xxxx-xxxx-xxxx-85c349766a13"],
        "assignee_ids": [],
        "creator_ids": ["80e102b0-xxxx-xxxx-xxxx-044bcfb4cd39"],
        # the names the payload carries, for by-name filters (`teams: [KOR]`)
        "team_ids:names": ["korosuke613", "kor"],
        "state_ids:names": ["backlog"],
    }


def test_linear_created_with_labels_and_assignee_is_labeled_and_assigned() -> None:
    payload = copy.deepcopy(fixture("linear", "issue_create"))
    payload["data"]["labels"] = [{"id": "l1", "name": "Bug"}]
    payload["data"]["labelIds"] = ["l1"]
    payload["data"]["assigneeId"] = "a1"
    events = normalize("linear", NO_HEADERS, payload)
    assert [e.event for e in events] == ["issue_created", "issue_labeled", "issue_assigned"]
    assert events[1].values["labels"] == ["bug"]


def test_linear_state_change() -> None:
    (event,) = normalize("linear", NO_HEADERS, fixture("linear", "issue_update_state"))
    assert event.event == "issue_state_changed"
    assert event.values["state_ids"] == ["e788ada6-xxxx-xxxx-xxxx-5717c26104ad"]


def test_linear_label_added_and_assigned() -> None:
    labeled, assigned = normalize(
        "linear", NO_HEADERS, fixture("linear", "issue_update_labeled_assigned")
    )
    assert labeled.event == "issue_labeled"
    assert labeled.values["labels"] == ["agent"]  # the added label only
    assert assigned.event == "issue_assigned"
    assert assigned.values["labels"] == ["improvement", "agent"]
    assert assigned.values["assignee_ids"] == ["3b8a1e2c-xxxx-xxxx-xxxx-9d1f00c0ffee"]
    assert assigned.values["project_ids"] == ["c69660ae-xxxx-xxxx-xxxx-5010fd7fda3b"]


def test_linear_other_updates_start_nothing() -> None:
    assert names("linear", fixture("linear", "issue_update_unarchived")) == []


def test_linear_comment_created() -> None:
    (event,) = normalize("linear", NO_HEADERS, fixture("linear", "comment_create"))
    assert event.event == "comment_created"
    assert event.values == {
        "issue_ids": ["6a17c5cc-5188-4487-ab56-44626a9b2daf"],
        "creator_ids": ["14982762-f00e-4595-8dc5-5a93d8ba4ba2"],
    }


def test_linear_mentions_from_the_rich_text_document() -> None:
    payload = copy.deepcopy(fixture("linear", "comment_create"))
    payload["data"]["bodyData"] = (
        '{"type":"doc","content":[{"type":"paragraph","content":['
        '{"type":"suggestion_userMentions","attrs":{"id":"u-9","label":"ana"}},'
        '{"type":"suggestion_issueMentions","attrs":{"id":"i-1"}},'
        '{"type":"text","text":" please look"}]}]}'
    )
    (event,) = normalize("linear", NO_HEADERS, payload)
    assert event.values["mentioned_user_ids"] == ["u-9"]


def test_linear_agent_session() -> None:
    (event,) = normalize("linear", NO_HEADERS, fixture("linear", "agent_session_created"))
    assert event.event == "agent_session_created"
    assert event.values == {
        "team_ids": ["eeaa0cbd-xxxx-xxxx-xxxx-1c701c3485f1"],
        "creator_ids": ["80e102b0-xxxx-xxxx-xxxx-044bcfb4cd39"],
        "keywords": ["@agent please fix the redirect after login; see the sentry trace"],
        "team_ids:names": ["korosuke613", "kor"],
    }


def test_linear_identity() -> None:
    assert delivery_id("linear", {"linear-delivery": "d-1"}, {}) == "d-1"


# Jira


def test_jira_issue_created() -> None:
    (event,) = normalize("jira", NO_HEADERS, fixture("jira", "issue_created"))
    assert event.event == "issue_created"
    assert event.values == {"project_keys": ["KAN"], "labels": []}


def test_jira_labels_and_status() -> None:
    labeled, status = normalize("jira", NO_HEADERS, fixture("jira", "issue_updated_labels_status"))
    assert labeled.event == "issue_labeled"
    assert labeled.values == {"project_keys": ["KAN"], "labels": ["Frontend", "agent"]}
    assert status.event == "status_changed"
    assert status.values == {"project_keys": ["KAN"], "status_ids": ["10001"]}


def test_jira_description_edit_starts_nothing() -> None:
    assert names("jira", fixture("jira", "issue_updated_description")) == []


def test_jira_agent_session() -> None:
    comment = fixture("jira", "comment_created_mention")
    assert names("jira", comment) == []
    (event,) = normalize("jira", NO_HEADERS, comment, "5b10ac8d82e05b22cc7d4ef5")
    assert event.event == "agent_session_created"
    assert event.values["project_keys"] == ["KAN"]
    assert "labels" not in event.values  # a comment delivery's issue has no labels here
    assert event.values["keywords"][0].startswith("[~accountid:5b10ac8d82e05b22cc7d4ef5] can you")
    created = fixture("jira", "issue_created")
    me = created["issue"]["fields"]["assignee"]["accountId"]
    assert names("jira", created, bot=me) == ["issue_created", "agent_session_created"]


def test_jira_identity() -> None:
    headers = {"x-atlassian-webhook-identifier": "5fa3c6-1"}
    assert delivery_id("jira", headers, {}) == "5fa3c6-1"
