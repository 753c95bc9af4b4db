"""End to end from the factory files users keep: two public example trees applied unchanged
through POST /factory-files/apply (02-sdlc-issue-to-pr and 07-self-hosted-worker, both listing
acme/api-service), GitHub, Slack and Linear connected, and real payloads signed as each
provider signs them start exactly the automations the files say, with the agent and run
configuration apply resolved; a resend starts nothing. SQLite and PostgreSQL."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.connections import signing
from tests.connections.provider_world import connect, deliver, evaluated, runs
from tests.connections.test_provider_triggers import LINEAR_SECRET, SLACK_SECRET, octokit_signed
from tests.platform.factory_files.support import (
    EXAMPLE_SECRETS,
    applied,
    example_files,
    set_secrets,
)
from tests.providers.conftest import GithubExamples, fixture
from tests.support import World


def _example(github_examples: GithubExamples, event: str, action: str) -> Any:
    return copy.deepcopy(next(p for p in github_examples[event] if p["action"] == action))


def _repo(payload: Any, full_name: str) -> Any:
    owner, name = full_name.split("/")
    payload["repository"] |= {"full_name": full_name, "name": name}
    payload["repository"]["owner"]["login"] = owner
    return payload


class Factories:
    """The two applied trees: each factory's uid and its automations by name."""

    def __init__(self, world: World) -> None:
        set_secrets(world, {name: "value" for name in EXAMPLE_SECRETS})
        self.uids: dict[str, str] = {}
        self.automations: dict[str, dict[str, Any]] = {}
        for example in ("02-sdlc-issue-to-pr", "07-self-hosted-worker"):
            factory_uid = applied(world, example_files(example))["factory_uid"]
            self.uids[example] = factory_uid
            listed = world.api("GET", f"/factory/{factory_uid}/automations").json()
            for item in listed["automations"]:
                self.automations[f"{example[:2]}/{item['name']}"] = item

    def uid(self, key: str) -> str:
        uid: str = self.automations[key]["uid"]
        return uid


@pytest.fixture
def trees(world: World) -> Factories:
    return Factories(world)


def _started(world: World, delivery_id: str) -> dict[str, Any]:
    return {row.automation_uid: row for row in runs(world.client, delivery_id)}


def test_github_deliveries_start_what_the_files_say(
    world: World, trees: Factories, github_examples: GithubExamples
) -> None:
    github = connect(world, "github")
    secret = github["secret"]

    labeled = _repo(_example(github_examples, "issues", "labeled"), "acme/api-service")
    labeled["label"]["name"] = "factory-ready"
    delivery_id = deliver(world.client, github, octokit_signed(secret, "issues", labeled, "g-1"))
    record = evaluated(world, github, delivery_id)
    started = _started(world, delivery_id)
    assert set(started) == {trees.uid("07/issue-labeled")}, record["trace"]
    run = started[trees.uid("07/issue-labeled")]
    automation = trees.automations["07/issue-labeled"]
    assert run.prompt.startswith("A maintainer labeled an issue `factory-ready`.")
    assert "GitHub event" in run.prompt and delivery_id in run.prompt
    assert run.agent_uid == automation["agent_uid"]
    assert run.factory_uid == trees.uids["07-self-hosted-worker"]
    assert run.agent_config["worker_host"] == "factory-worker"
    assert run.worker_host == "factory-worker"  # pinned: that worker's runner alone claims it
    assert run.agent_config["agent"]["uid"] == automation["agent_uid"]
    assert run.agent_config["model_id"] == "auto" and run.agent_config["runner"] == "linux-worker"
    # GitHub's redelivery of the same delivery is a duplicate: nothing more starts
    again = octokit_signed(secret, "issues", labeled, "g-1")
    assert deliver(world.client, github, again) == delivery_id

    # a mention in a comment on acme/webapp, on an issue labeled for the Acme factory: 02 only
    comment = _repo(_example(github_examples, "issue_comment", "created"), "acme/webapp")
    comment["comment"]["body"] = "@warp-factory can you take this one?"
    comment["issue"]["labels"] = [{"name": "factory:Acme"}]
    delivery_id = deliver(
        world.client, github, octokit_signed(secret, "issue_comment", comment, "g-2")
    )
    evaluated(world, github, delivery_id)
    started = _started(world, delivery_id)
    assert set(started) == {trees.uid("02/github-mention-assign")}
    mention = started[trees.uid("02/github-mention-assign")]
    assert mention.agent_config["runner"] == "linux-standard"
    assert mention.agent_config["agent"]["name"] == "foreman" and mention.worker_host is None

    # a merged pull request of acme/ios-app: the closed-or-merged automation, once
    merged = _repo(_example(github_examples, "pull_request", "closed"), "acme/ios-app")
    merged["pull_request"] |= {"merged": True, "labels": [{"name": "factory:Acme"}]}
    delivery_id = deliver(
        world.client, github, octokit_signed(secret, "pull_request", merged, "g-3")
    )
    evaluated(world, github, delivery_id)
    assert set(_started(world, delivery_id)) == {trees.uid("02/github-pr-closed-or-merged")}

    # the same label on a repository no factory lists starts nothing
    elsewhere = _repo(copy.deepcopy(labeled), "acme/other")
    delivery_id = deliver(world.client, github, octokit_signed(secret, "issues", elsewhere, "g-4"))
    assert evaluated(world, github, delivery_id)["trace"]["outcome"] == "no_automations"
    assert _started(world, delivery_id) == {}


def test_slack_and_linear_deliveries_start_what_the_files_say(
    world: World, trees: Factories
) -> None:
    slack = connect(world, "slack", secret=SLACK_SECRET)
    mention = deliver(
        world.client, slack, signing.slack(SLACK_SECRET, fixture("slack", "app_mention"))
    )
    direct = deliver(
        world.client, slack, signing.slack(SLACK_SECRET, fixture("slack", "message_im"))
    )
    evaluated(world, slack, mention)
    evaluated(world, slack, direct)
    assert set(_started(world, mention)) == {trees.uid("02/slack-app-mentions")}
    assert set(_started(world, direct)) == {trees.uid("02/slack-dms")}
    run = _started(world, direct)[trees.uid("02/slack-dms")]
    assert "Slack event" in run.prompt and "event message_dm, message_im" in run.prompt
    assert run.metadata["event"] == "message_dm, message_im"

    linear = connect(world, "linear", secret=LINEAR_SECRET)
    session = fixture("linear", "agent_session_created")
    session.pop("webhookTimestamp", None)
    delivery_id = deliver(world.client, linear, signing.linear(LINEAR_SECRET, session))
    evaluated(world, linear, delivery_id)
    started = _started(world, delivery_id)
    assert set(started) == {trees.uid("02/linear-agent-sessions")}
    expected_agent = trees.automations["02/linear-agent-sessions"]["agent_uid"]
    assert started[trees.uid("02/linear-agent-sessions")].agent_uid == expected_agent
