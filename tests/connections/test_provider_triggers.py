"""Provider triggers fire, end to end, on SQLite and PostgreSQL: a team's automations with
provider triggers, a connection, real payloads signed as the providers sign them (GitHub's by
@octokit/webhooks-methods through the node oracle, Slack's by slack_sdk), and exactly the
expected automations start runs, with their prompt, agent and configuration; a resend starts
nothing; the delivery log explains the outcome."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from sqlalchemy import update

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from tests.connections import signing
from tests.connections.provider_world import (
    add_factory,
    automation,
    connect,
    deliver,
    evaluated,
    runs,
    set_repositories,
    started,
    trigger,
)
from tests.providers.conftest import GithubExamples, fixture
from tests.signatures.vendor_oracle import ask
from tests.support import World, eventually

SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
LINEAR_SECRET = "lin_wh_0123456789abcdef"
JIRA_AGENT = "5b10ac8d82e05b22cc7d4ef5"  # the account mentioned in the Jira comment sample


def octokit_signed(secret: str, event: str, payload: Any, delivery: str) -> signing.Signed:
    """Signed by @octokit/webhooks-methods, over the exact text sent."""
    text = signing.encode(payload).decode()
    (answer,) = ask([{"op": "github_sign", "secret": secret, "payload": text}])
    return signing.github(secret, event, payload, delivery, signature=answer["signature"])


def labeled_example(github_examples: GithubExamples) -> Any:
    return next(p for p in github_examples["issues"] if p["action"] == "labeled")


def configure(world: World, automation_uid: str, agent_uid: str, config: dict[str, Any]) -> None:
    """What apply stores for a file automation: its agent and what its runs carry."""

    async def run(services: Services) -> None:
        a = t.automations
        async with services.database.transaction() as conn:
            await conn.execute(
                update(a)
                .where(a.c.uid == automation_uid)
                .values(agent_uid=agent_uid, agent_config=config)
            )

    world.client.run(run)


def test_github_starts_exactly_the_matching_automations(
    world: World, github_examples: GithubExamples
) -> None:
    gw = world.client
    set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
    elsewhere = add_factory(gw, world, "Elsewhere", "acme/other")
    # two triggers that both match: one run
    bugs = automation(
        world,
        world.factory_uid,
        "bugs",
        trigger("github", "issue_labeled", labels=["bug"]),
        trigger("github", "issue_labeled", repos=["codertocat/hello-world"]),
        prompt="Fix the bug.",
    )
    wanted = automation(
        world,
        world.factory_uid,
        "agent label",
        trigger("github", "issue_labeled", labels=["agent"]),
    )
    created = automation(world, world.factory_uid, "created", trigger("github", "issue_created"))
    other_repo = automation(world, elsewhere, "other repo", trigger("github", "issue_labeled"))
    not_wontfix = automation(
        world,
        world.factory_uid,
        "not wontfix",
        trigger("github", "issue_labeled", labels={"not_in": ["wontfix"]}),
        prompt="Look at the label.",
    )
    config = {"model_id": "claude-4-5-haiku", "worker_host": "mac-mini-1"}
    configure(world, not_wontfix, world.agent_uid, config)
    github = connect(world, "github")

    payload = labeled_example(github_examples)
    sent = octokit_signed(
        github["secret"], "issues", payload, "72d3162e-cc78-11e3-81ab-4c9367dc0958"
    )
    delivery_id = deliver(gw, github, sent)
    record = evaluated(world, github, delivery_id)

    assert started(gw, delivery_id) == {bugs, not_wontfix}
    rows = {row.automation_uid: row for row in runs(gw, delivery_id)}
    first = rows[bugs]
    assert first.prompt.startswith("Fix the bug.\n\n---\nGitHub event\n")
    assert f'provider connection "GitHub" (uid {github["uid"]})' in first.prompt
    assert f"event issue_labeled, delivery id {delivery_id}" in first.prompt
    assert "untrusted" in first.prompt and "event-payload.json" in first.prompt
    assert first.title == "bugs" and first.source == "WEBHOOK"
    assert first.factory_uid == world.factory_uid and first.team_uid == world.team_uid
    assert first.agent_uid == world.agent_uid  # the factory's foreman
    assert first.metadata == {
        "automation_id": bugs,
        "connection_uid": github["uid"],
        "provider": "github",
        "event": "issue_labeled",
        "delivery_id": delivery_id,
    }
    (artifact,) = first.artifacts
    assert artifact["artifact_type"] == "FILE"
    assert artifact["data"]["filename"] == "event-payload.json"
    assert artifact["data"]["size_bytes"] == len(sent.body)
    assert rows[not_wontfix].agent_config == config  # the automation's resolved configuration

    trace = record["trace"]
    assert trace["outcome"] == "matched"
    (event,) = trace["events"]
    assert event["provider"] == "github" and event["event"] == "issue_labeled"
    assert event["values"]["labels"] == ["bug"] and event["values"]["repos"] == [
        "codertocat/hello-world"
    ]
    considered = {a["automation_uid"]: a for a in trace["automations"]}
    # the other factory does not list the repository, and `created` listens to another event
    assert set(considered) == {bugs, wanted, not_wontfix}
    assert considered[bugs]["matched"] and considered[bugs]["key"] is None
    assert considered[bugs]["trigger"] == 0
    assert not considered[wanted]["matched"] and considered[wanted]["key"] == "labels"
    assert considered[wanted]["factory_uid"] == world.factory_uid
    assert created not in considered and other_repo not in considered

    # GitHub's redelivery (same X-GitHub-Delivery) is a duplicate: it starts nothing
    again = octokit_signed(
        github["secret"], "issues", payload, "72d3162e-cc78-11e3-81ab-4c9367dc0958"
    )
    assert deliver(gw, github, again) == delivery_id
    opened = copy.deepcopy(labeled_example(github_examples))
    opened["action"] = "opened"
    # another issue: a later event on issue 1 would continue its work item, not start a run
    opened["issue"]["number"] = 2
    later = deliver(gw, github, octokit_signed(github["secret"], "issues", opened, "later-1"))
    evaluated(world, github, later)  # evaluated after anything the resend could have caused
    assert len(runs(gw, delivery_id)) == 2
    assert started(gw, later) == {created}


def test_a_connection_serves_only_its_team(world: World, github_examples: GithubExamples) -> None:
    """A stranger's team connects GitHub too: its deliveries reach its own factories only."""
    gw = world.client
    set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
    mine = automation(world, world.factory_uid, "mine", trigger("github", "issue_labeled"))
    stranger = World(**{**world.__dict__, "user_key": world.stranger_key})
    theirs = connect(stranger, "github")
    payload = labeled_example(github_examples)
    delivery_id = deliver(gw, theirs, octokit_signed(theirs["secret"], "issues", payload, "x-1"))
    record = evaluated(stranger, theirs, delivery_id)
    assert record["trace"]["outcome"] == "no_automations"
    assert started(gw, delivery_id) == set()
    ours = connect(world, "github")
    delivery_id = deliver(gw, ours, octokit_signed(ours["secret"], "issues", payload, "x-2"))
    evaluated(world, ours, delivery_id)
    assert started(gw, delivery_id) == {mine}


def _slack(world: World) -> tuple[dict[str, Any], signing.Signed, list[str], list[str]]:
    gw_factory = world.factory_uid
    match = automation(
        world,
        gw_factory,
        "thumbs up",
        trigger("slack", "reaction_added", emojis=[":thumbsup:"], channel_ids=["C123ABC456"]),
    )
    miss = automation(
        world, gw_factory, "eyes", trigger("slack", "reaction_added", emojis=["eyes"])
    )
    connection = connect(world, "slack", secret=SLACK_SECRET)
    return (
        connection,
        signing.slack(SLACK_SECRET, fixture("slack", "reaction_added")),
        [match],
        [miss],
    )


def _linear(world: World) -> tuple[dict[str, Any], signing.Signed, list[str], list[str]]:
    both = automation(
        world,
        world.factory_uid,
        "labeled or assigned",
        trigger("linear", "issue_labeled", labels=["AGENT"], teams=["kor"]),
        trigger("linear", "issue_assigned"),
    )
    miss = automation(world, world.factory_uid, "states", trigger("linear", "issue_state_changed"))
    other_team = automation(
        world, world.factory_uid, "platform", trigger("linear", "issue_labeled", teams=["Platform"])
    )
    connection = connect(world, "linear", secret=LINEAR_SECRET)
    payload = fixture("linear", "issue_update_labeled_assigned")
    payload.pop("webhookTimestamp")
    return connection, signing.linear(LINEAR_SECRET, payload), [both], [miss, other_team]


def _jira(world: World) -> tuple[dict[str, Any], signing.Signed, list[str], list[str]]:
    session = automation(
        world,
        world.factory_uid,
        "agent",
        trigger("jira", "agent_session_created", project_keys=["KAN"], keywords=["back button"]),
    )
    miss = automation(world, world.factory_uid, "created", trigger("jira", "issue_created"))
    connection = connect(world, "jira", bot=JIRA_AGENT)
    sent = signing.jira(connection["secret"], fixture("jira", "comment_created_mention"))
    return connection, sent, [session], [miss]


def _gitlab(world: World) -> tuple[dict[str, Any], signing.Signed, list[str], list[str]]:
    set_repositories(world.client, world.factory_uid, "gitlabhq/gitlab-test")
    opened = automation(
        world,
        world.factory_uid,
        "opened MRs",
        trigger("gitlab", "merge_request", actions=["open"], base_branches=["refs/heads/master"]),
    )
    merged = automation(
        world, world.factory_uid, "merged", trigger("gitlab", "merge_request", actions=["merge"])
    )
    connection = connect(world, "gitlab")
    sent = signing.gitlab(connection["secret"], fixture("gitlab", "merge_request_open"))
    return connection, sent, [opened], [merged]


SCENARIOS = {"slack": _slack, "linear": _linear, "jira": _jira, "gitlab": _gitlab}


@pytest.mark.parametrize("provider", sorted(SCENARIOS))
def test_each_provider_starts_the_matching_automations(world: World, provider: str) -> None:
    connection, sent, expected, unexpected = SCENARIOS[provider](world)
    delivery_id = deliver(world.client, connection, sent)
    record = evaluated(world, connection, delivery_id)
    assert started(world.client, delivery_id) == set(expected), record["trace"]
    assert record["trace"]["outcome"] == "matched"
    considered = {a["automation_uid"]: a for a in record["trace"]["automations"]}
    for uid in unexpected:
        assert uid not in considered or not considered[uid]["matched"]
    for row in runs(world.client, delivery_id):
        assert row.metadata["provider"] == provider
        assert row.metadata["delivery_id"] == delivery_id
    # the provider's retry of the same delivery starts nothing more
    assert world.client.post(
        connection["path"], content=sent.body, headers=sent.headers
    ).json() == {"delivery_id": delivery_id}


def test_slack_retries_are_duplicates_and_handshakes_start_nothing(world: World) -> None:
    connection, sent, expected, _ = _slack(world)
    handshake = {"token": "t", "challenge": "c-1", "type": "url_verification"}
    shake = signing.slack(SLACK_SECRET, handshake)
    answered = world.client.post(connection["path"], content=shake.body, headers=shake.headers)
    assert answered.json() == {"challenge": "c-1"}
    delivery_id = deliver(world.client, connection, sent)
    retry = signing.slack(SLACK_SECRET, orjson.loads(sent.body), retry=1)
    assert deliver(world.client, connection, retry) == delivery_id
    evaluated(world, connection, delivery_id)
    assert started(world.client, delivery_id) == set(expected)
    path = f"/provider-connections/{connection['uid']}/deliveries"

    def labels() -> list[str]:
        return [d["label"] for d in world.api("GET", path).json()["deliveries"]]

    # the refused copy's record is written apart from the accepted one, a moment later
    eventually(lambda: labels() == ["Duplicate", "Accepted"])


def test_filter_backtest_over_the_connection_log(
    world: World, github_examples: GithubExamples
) -> None:
    gw = world.client
    set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
    bugs = automation(
        world, world.factory_uid, "bugs", trigger("github", "issue_labeled", labels=["bug"])
    )
    elsewhere = add_factory(gw, world, "Elsewhere", "acme/other")
    far = automation(world, elsewhere, "far", trigger("github", "issue_labeled"))
    github = connect(world, "github")
    labeled = labeled_example(github_examples)
    opened = copy.deepcopy(labeled) | {"action": "opened"}
    first = deliver(gw, github, octokit_signed(github["secret"], "issues", labeled, "bt-1"))
    second = deliver(gw, github, octokit_signed(github["secret"], "issues", opened, "bt-2"))
    evaluated(world, github, first)
    evaluated(world, github, second)
    path = f"/provider-connections/{github['uid']}/filter-test"

    def tried(body: dict[str, Any]) -> dict[str, Any]:
        answer = world.api("POST", path, json=body)
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = answer.json()
        return result

    agent = tried({"trigger": trigger("github", "issue_labeled", labels=["agent"])})
    assert (agent["tested"], agent["matched"]) == (2, 0)
    by_id = {d["delivery_id"]: d for d in agent["deliveries"]}
    assert by_id[first]["path"] == "labels" and "bug" in by_id[first]["mismatch"]
    assert by_id[second]["path"] == "event"
    assert [d["delivery_id"] for d in agent["deliveries"]] == [second, first]  # newest first
    mine = tried({"automation_uid": bugs})
    assert (mine["matched"], {d["delivery_id"] for d in mine["deliveries"] if d["matched"]}) == (
        1,
        {first},
    )
    routed = tried({"automation_uid": far, "last": 1})
    assert routed["tested"] == 1 and routed["deliveries"][0]["path"] == "event"
    routed = tried({"automation_uid": far, "since": "2020-01-01T00:00:00Z"})
    assert {d["path"] for d in routed["deliveries"]} == {"repos", "event"}
    refused = world.api("POST", path, json={"trigger": trigger("slack", "app_mention")})
    assert refused.status_code == 400 and refused.json()["detail"].startswith("trigger.provider")
    bad = world.api(
        "POST", path, json={"trigger": trigger("github", "issue_labeled", colour=["x"])}
    )
    assert bad.status_code == 400 and bad.json()["detail"].startswith("trigger")


def test_the_explanation_names_by_name_keys_as_written(world: World) -> None:
    platform = automation(
        world, world.factory_uid, "platform", trigger("linear", "issue_labeled", teams=["Platform"])
    )
    connection = connect(world, "linear", secret=LINEAR_SECRET)
    payload = fixture("linear", "issue_update_labeled_assigned")
    payload.pop("webhookTimestamp")
    delivery_id = deliver(world.client, connection, signing.linear(LINEAR_SECRET, payload))
    record = evaluated(world, connection, delivery_id)
    assert record["trace"]["outcome"] == "no_match"
    (considered,) = record["trace"]["automations"]
    assert considered["automation_uid"] == platform
    assert considered["key"] == "teams (names)" and considered["trigger"] == 0
    names = [e["event"] for e in record["trace"]["events"]]
    assert names == ["issue_labeled", "issue_assigned"]
    assert record["trace"]["events"][0]["values"]["team_ids:names"] == ["korosuke613", "kor"]
    listed = world.api("GET", f"/provider-connections/{connection['uid']}/deliveries").json()
    (item,) = listed["deliveries"]
    assert item["trace"]["events"] == [
        {"provider": "linear", "event": "issue_labeled"},
        {"provider": "linear", "event": "issue_assigned"},
    ]


@pytest.mark.parametrize("backend", ["redis", "redis-cluster"])
def test_on_redis_backends(
    backend: str,
    tmp_path: Any,
    redis_url: str,
    redis_prefix: str,
    request: pytest.FixtureRequest,
    github_examples: GithubExamples,
) -> None:
    """The same path with the Redis stream (and Redis Cluster) between ingress and evaluator."""
    from tests.ingress.hooks import backend_settings, redis_url_for
    from tests.support import GatewayClient

    url = redis_url_for(backend, request, redis_url)
    settings = backend_settings(
        backend, f"sqlite:///{tmp_path}/gw.db", url, redis_prefix, evaluator="inline"
    )
    with GatewayClient.running(settings) as gw:
        world = World.create(gw)
        set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
        bugs = automation(world, world.factory_uid, "bugs", trigger("github", "issue_labeled"))
        github = connect(world, "github")
        payload = labeled_example(github_examples)
        sent = octokit_signed(github["secret"], "issues", payload, "redis-1")
        delivery_id = deliver(gw, github, sent)
        assert evaluated(world, github, delivery_id)["trace"]["outcome"] == "matched"
        assert started(gw, delivery_id) == {bugs}
        assert deliver(gw, github, sent) == delivery_id
        connection, slack_sent, expected, _ = _slack(world)
        slack_id = deliver(gw, connection, slack_sent)
        evaluated(world, connection, slack_id)
        assert started(gw, slack_id) == set(expected)
        assert len(runs(gw, delivery_id)) == 1


def test_the_explanation_follows_changes_made_since(
    world: World, github_examples: GithubExamples
) -> None:
    gw = world.client
    set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
    kept = automation(world, world.factory_uid, "kept", trigger("github", "issue_labeled"))
    gone = automation(world, world.factory_uid, "gone", trigger("github", "issue_labeled"))
    missed = automation(
        world, world.factory_uid, "missed", trigger("github", "issue_labeled", labels=["agent"])
    )
    github = connect(world, "github")
    payload = labeled_example(github_examples)
    delivery_id = deliver(gw, github, octokit_signed(github["secret"], "issues", payload, "c-1"))
    before = evaluated(world, github, delivery_id)["trace"]["automations"]
    assert {a["automation_uid"]: a["filter_changed"] for a in before} == {
        kept: False,
        gone: False,
        missed: False,
    }
    base = f"/factory/{world.factory_uid}/automations"
    assert world.api("DELETE", f"{base}/{gone}").status_code == 204
    wider = {"triggers": [trigger("github", "issue_labeled", labels=["agent", "bug"])]}
    assert world.api("PATCH", f"{base}/{missed}", json=wider).status_code == 200
    path = f"/provider-connections/{github['uid']}/deliveries/{delivery_id}"
    after = {a["automation_uid"]: a for a in world.api("GET", path).json()["trace"]["automations"]}
    assert after[kept]["matched"] and after[kept]["filter_changed"] is False
    assert after[gone]["matched"] and "deleted" in after[gone]["mismatch"]
    # not matched then; explained against today's triggers, which would match
    assert not after[missed]["matched"] and after[missed]["filter_changed"] is True
    assert after[missed]["key"] is None
