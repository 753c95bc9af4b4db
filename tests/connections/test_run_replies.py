"""Runs answer where their work came from: a GitHub issue's labeled event (@octokit's own
example) starts a run; its start posts one comment on the issue and its end edits that comment
with the outcome and the pull request, through the outbound dispatcher, against GitHub's REST
API standing in on loopback. Retries (5xx, 429 with Retry-After) still make one comment; a
revoked token ends the reply failed and tells the factory's owners. The main case runs on both
deployment shapes (embedded SQLite; PostgreSQL with Redis); Slack's and Linear's documented
examples reply in their thread and on their issue (on both shapes too), GitLab's with a note on
the issue or merge request and Jira's with an ADF comment, each edited with PUT."""

from __future__ import annotations

import copy
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.kernel.settings import Settings
from tests.conftest import make_settings
from tests.connections.provider_world import (
    Signed,
    automation,
    connect,
    deliver,
    evaluated,
    runs,
    set_repositories,
    signing,
    trigger,
)
from tests.connections.test_provider_triggers import (
    JIRA_AGENT,
    LINEAR_SECRET,
    SLACK_SECRET,
    labeled_example,
    octokit_signed,
)
from tests.platform.runners.test_runner_api import Runner
from tests.providers.conftest import GithubExamples, fixture
from tests.replies.github_api import GitHubApi
from tests.replies.gitlab_api import GitLabApi
from tests.replies.jira_api import JiraApi
from tests.replies.linear_api import LinearApi
from tests.replies.slack_api import SlackApi
from tests.replies.stand_in import Answer, Call
from tests.subscriptions.served import served
from tests.subscriptions.test_event_stream import messages
from tests.support import GatewayClient, World, eventually, scaled

ISSUE = "Codertocat/Hello-World#1"
PULL = "https://github.com/Codertocat/Hello-World/pull/2"
FAST = {"outbound_allow_private": "1", "reply_retry_s": "0.2"}


@pytest.fixture
def gateway_of(
    request: pytest.FixtureRequest, own_store: Callable[[str], str], sqlite_store: Any
) -> Callable[[str], Any]:
    """`gateway_of(shape)`: a gateway of its own store (no other test's dispatcher sends its
    replies): embedded on SQLite, or PostgreSQL with Redis under a prefix of its own."""

    @contextmanager
    def make(shape: str) -> Iterator[World]:
        settings: Settings
        if shape == "embedded":
            settings = make_settings(sqlite_store(), **FAST)
        else:
            prefix = f"{request.getfixturevalue('redis_prefix')}:{secrets.token_hex(8)}"
            redis = request.getfixturevalue("redis_url")
            settings = make_settings(own_store("postgresql"), redis, prefix=prefix, **FAST)
        with GatewayClient.running(settings) as client:
            yield World.create(client)

    return make


@pytest.fixture
def github() -> Iterator[GitHubApi]:
    api = GitHubApi(issues={ISSUE}, tokens={"ghp_valid"})
    with api.serve():
        yield api


def provider_run(
    world: World,
    provider: str,
    sign: Callable[[dict[str, Any]], Signed],
    *triggers: dict[str, Any],
    **connection_body: Any,
) -> tuple[str, dict[str, Any]]:
    """A delivery (`sign(connection)`) to a new `provider` connection (`connection_body`: its
    secret, credentials, api_base_url) that one automation on `triggers` matches: its one
    run, and the connection."""
    automation(world, world.factory_uid, f"{provider} work", *triggers)
    connection = connect(world, provider, **connection_body)
    delivery_id = deliver(world.client, connection, sign(connection))
    evaluated(world, connection, delivery_id)
    (run,) = runs(world.client, delivery_id)
    return str(run.run_id), connection


def github_run(
    world: World, github: GitHubApi, examples: GithubExamples, token: str = "ghp_valid"
) -> tuple[str, str]:
    """The labeled example delivered to a GitHub connection with reply credentials: its run
    and the connection."""
    set_repositories(world.client, world.factory_uid, "Codertocat/Hello-World")
    labeled = labeled_example(examples)
    run_id, connection = provider_run(
        world,
        "github",
        lambda c: octokit_signed(c["secret"], "issues", labeled, "d-1"),
        trigger("github", "issue_labeled"),
        api_token=token,
        api_base_url=github.url,
    )
    return run_id, connection["uid"]


def work(runner: Runner, run_id: str, outcome: str = "SUCCEEDED") -> None:
    """A runner takes the run, opens a pull request and finishes."""
    (claimed,) = runner.claim()
    assert claimed["run_id"] == run_id
    runner.on(run_id, "progress", state="INPROGRESS", status_message="working")
    runner.on(run_id, "artifacts", 201, artifact_type="PULL_REQUEST", url=PULL,
              branch="fix-1", title="Fix the spelling")  # fmt: skip
    runner.on(run_id, "finish", outcome=outcome, status_message="Fixed it in one PR.")


def replies_of(world: World, run_id: str) -> list[dict[str, Any]]:
    answer = world.api("GET", f"/agent/runs/{run_id}")
    assert answer.status_code == 200, answer.text
    replies: list[dict[str, Any]] = answer.json().get("replies", [])
    return replies


def settled(world: World, run_id: str, state: str = "delivered") -> dict[str, Any]:
    """The run's one reply once its edit is settled `state` (its start delivered first)."""

    def probe() -> Any:
        found = replies_of(world, run_id)
        if len(found) == 1 and found[0]["state"] == state:
            return found[0]
        return None

    reply: dict[str, Any] = eventually(probe, timeout=30)
    return reply


def edited(github: GitHubApi, word: str) -> None:
    eventually(lambda: any(word in c["body"] for c in github.comments.values()), timeout=30)


@pytest.mark.parametrize("shape", ["embedded", "redis"])
def test_a_run_comments_once_then_edits_its_comment(
    gateway_of: Callable[[str], Any], github: GitHubApi, github_examples: GithubExamples, shape: str
) -> None:
    with gateway_of(shape) as world:
        run_id, _ = github_run(world, github, github_examples)
        assert replies_of(world, run_id) == []  # queued: nothing posted yet
        runner = Runner(world)
        (claimed,) = runner.claim()
        assert claimed["run_id"] == run_id
        eventually(lambda: len(github.comments) == 1, timeout=30)
        (comment,) = github.comments.values()
        assert "is working on it" in comment["body"] and "github work" in comment["body"]
        assert "Codertocat" in comment["body"]  # who labeled the issue
        assert f"/console/runs/{run_id}" in comment["body"]
        runner.on(run_id, "progress", state="INPROGRESS", status_message="working")
        runner.on(run_id, "artifacts", 201, artifact_type="PULL_REQUEST", url=PULL,
                  branch="fix-1", title="Fix the spelling")  # fmt: skip
        runner.on(run_id, "finish", outcome="SUCCEEDED", status_message="Fixed it in one PR.")
        edited(github, "finished")
        reply = settled(world, run_id)
        assert len(github.calls_to(r"/repos/.*/issues/1/comments")) == 1
        assert len(github.calls_to(r"/repos/.*/issues/comments/\d+")) == 1
        (comment_id, comment) = next(iter(github.comments.items()))
        assert "Fixed it in one PR." in comment["body"]
        assert f"[Fix the spelling]({PULL})" in comment["body"]
        assert reply == {
            "target": {"provider": "github", "repository": "Codertocat/Hello-World", "number": 1},
            "state": "delivered",
            "attempts": 2,
            "last_error": None,
            "link": f"https://github.com/Codertocat/Hello-World/issues/1#issuecomment-{comment_id}",
        }
        scraped = world.client.get("/metrics").text
        # counts of this process, whose other tests' gateways reply too
        delivered = re.search(
            r'^gateway_outbound_attempts_total\{kind="reply",result="delivered"\} (\S+)$',
            scraped,
            re.MULTILINE,
        )
        assert delivered is not None and float(delivered.group(1)) >= 2
        assert "gateway_outbound_backlog 0.0" in scraped


def streamed(world: World, types: str, count: int) -> list[dict[str, Any]]:
    """The first `count` events of `types` on the team's live stream, replayed from the start."""
    headers = {**world.user, "Last-Event-ID": "0"}
    with (
        served(world.client) as port,
        httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", timeout=scaled(30)) as http,
        http.stream("GET", f"/events/stream?types={types}", headers=headers) as stream,
    ):
        return messages(stream.iter_lines(), count)


def run_work_item_id(world: World, run_id: str) -> str:
    answer = world.api("GET", f"/agent/runs/{run_id}")
    assert answer.status_code == 200, answer.text
    found: str = answer.json()["work_item_id"]
    assert found  # the issue's work item
    return found


def test_5xx_then_success_makes_one_comment(
    gateway_of: Callable[[str], Any], github: GitHubApi, github_examples: GithubExamples
) -> None:
    with gateway_of("embedded") as world:
        run_id, _ = github_run(world, github, github_examples)
        github.answer_next(502, {"message": "Server Error"})
        github.answer_next(503, "upstream connect error")
        work(Runner(world), run_id)
        edited(github, "finished")
        reply = settled(world, run_id)
        assert len(github.comments) == 1
        assert len(github.calls_to(r"/repos/.*/issues/1/comments")) == 3  # 502, 503, 201
        assert reply["attempts"] == 4 and reply["last_error"] is None


def test_a_429_is_retried_after_what_retry_after_says(
    gateway_of: Callable[[str], Any], github: GitHubApi, github_examples: GithubExamples
) -> None:
    with gateway_of("embedded") as world:
        github_run(world, github, github_examples)
        github.answer_next(429, {"message": "slow down"}, {"Retry-After": "2"})
        Runner(world).claim()
        eventually(lambda: len(github.comments) == 1, timeout=30)
        posts = github.calls_to(r"/repos/.*/issues/1/comments")
        assert len(posts) == 2
        assert posts[1].at - posts[0].at >= 2.0  # not the 0.2 s of the backoff
        assert len(github.comments) == 1


def test_a_revoked_token_fails_the_reply_and_tells_the_owners(
    gateway_of: Callable[[str], Any], github: GitHubApi, github_examples: GithubExamples
) -> None:
    with gateway_of("embedded") as world:
        run_id, connection_uid = github_run(world, github, github_examples, token="ghp_revoked")
        runner = Runner(world)
        runner.claim()
        reply = settled(world, run_id, "failed")
        assert reply["attempts"] == 1  # a refusal is not retried
        assert reply["last_error"] == "401 Unauthorized: Bad credentials"
        assert github.comments == {}
        inbox = world.api("GET", "/factory-inbox").json()["notifications"]
        (notice,) = [n for n in inbox if n["kind"] == "reply_failed"]
        assert notice["run_id"] == run_id and notice["title"].startswith("Reply failed: ")
        assert "Codertocat/Hello-World#1" in notice["detail"]
        assert "401 Unauthorized: Bad credentials" in notice["detail"]
        (event,) = streamed(world, "reply.failed", 1)
        assert event["event"] == "reply.failed"
        assert event["data"]["data"] == {
            "connection_uid": connection_uid,
            "factory_uid": world.factory_uid,
            "provider": "github",
            "error": "401 Unauthorized: Bad credentials",
            "run_id": run_id,
            "work_item_id": run_work_item_id(world, run_id),
            "status": 401,
        }

        # a new token: the end's reply posts (the start left no message to edit), and the
        # notice is over
        path = f"/provider-connections/{connection_uid}"
        assert world.api("PATCH", path, json={"api_token": "ghp_valid"}).status_code == 200
        runner.on(run_id, "finish", outcome="SUCCEEDED", status_message="done")
        reply = settled(world, run_id)
        (comment,) = github.comments.values()
        assert "finished" in comment["body"]
        inbox = world.api("GET", "/factory-inbox").json()["notifications"]
        assert [n for n in inbox if n["kind"] == "reply_failed"] == []


@pytest.mark.parametrize("shape", ["embedded", "redis"])
def test_slack_acknowledges_in_the_thread_then_updates(
    gateway_of: Callable[[str], Any], shape: str
) -> None:
    slack = SlackApi(channels={"C123ABC456"}, tokens={"xoxb-valid"})
    mention = fixture("slack", "app_mention")
    with slack.serve(), gateway_of(shape) as world:
        run_id, _ = provider_run(
            world,
            "slack",
            lambda _: signing.slack(SLACK_SECRET, mention),
            trigger("slack", "app_mention"),
            secret=SLACK_SECRET,
            bot_token="xoxb-valid",
            api_base_url=slack.url + "/api",
        )
        work(Runner(world), run_id)
        reply = settled(world, run_id)
        (((channel, _ts), message),) = slack.messages.items()
        assert (channel, message["thread_ts"]) == ("C123ABC456", mention["event"]["ts"])
        assert (
            "finished" in message["text"] and "<" + PULL + "|Fix the spelling>" in message["text"]
        )
        assert len(slack.calls_to(r"/api/chat\.postMessage")) == 1
        assert len(slack.calls_to(r"/api/chat\.update")) == 1
        assert reply["target"] == {
            "provider": "slack",
            "channel": "C123ABC456",
            "thread_ts": mention["event"]["ts"],
        }


@pytest.mark.parametrize("shape", ["embedded", "redis"])
def test_linear_comments_on_the_issue_then_edits(
    gateway_of: Callable[[str], Any], shape: str
) -> None:
    created = fixture("linear", "issue_create")
    issue_id = created["data"]["id"]
    linear = LinearApi(issues={issue_id}, keys={"lin_api_valid"})
    with linear.serve(), gateway_of(shape) as world:
        run_id, _ = provider_run(
            world,
            "linear",
            lambda _: signing.linear(LINEAR_SECRET, created),
            trigger("linear", "issue_created"),
            secret=LINEAR_SECRET,
            api_token="lin_api_valid",
            api_base_url=linear.url + "/graphql",
        )
        work(Runner(world), run_id)
        settled(world, run_id)
        (comment,) = linear.comments.values()
        assert comment["issueId"] == issue_id and "finished" in comment["body"]
        assert len(linear.calls) == 2  # commentCreate, then commentUpdate


@pytest.mark.parametrize(
    ("example", "triggered", "thread", "collection"),
    [
        ("merge_request_open", ("merge_request",), "gitlabhq/gitlab-test!1", "merge_requests"),
        ("issue_open", ("bot_mentioned",), "gitlabhq/gitlab-test#23", "issues"),
    ],
)
def test_gitlab_notes_on_the_issue_or_merge_request_then_edits(
    gateway_of: Callable[[str], Any],
    example: str,
    triggered: tuple[str],
    thread: str,
    collection: str,
) -> None:
    payload = fixture("gitlab", example)
    payload["object_attributes"]["description"] = "@factory-bot please have a look"
    gitlab = GitLabApi(threads={thread}, tokens={"glpat-valid"})
    with gitlab.serve(), gateway_of("embedded") as world:
        set_repositories(world.client, world.factory_uid, "gitlabhq/gitlab-test")
        run_id, _ = provider_run(
            world,
            "gitlab",
            lambda c: signing.gitlab(c["secret"], payload),
            trigger("gitlab", *triggered),
            bot="factory-bot",
            api_token="glpat-valid",
            api_base_url=gitlab.url + "/api/v4",
        )
        work(Runner(world), run_id)
        reply = settled(world, run_id)
        (note,) = gitlab.notes.values()
        assert note["thread"] == thread
        assert "finished" in note["body"] and f"[Fix the spelling]({PULL})" in note["body"]
        notes = rf"/api/v4/projects/gitlabhq%2Fgitlab-test/{collection}/\d+/notes"
        assert [c.method for c in gitlab.calls_to(notes + r"(/\d+)?$")] == ["POST", "PUT"]
        kind = "merge_request" if thread.count("!") else "issue"
        assert reply["target"] | {"url": None} == {
            "provider": "gitlab",
            "project": "gitlabhq/gitlab-test",
            "kind": kind,
            "iid": int(thread.rsplit("!" if kind == "merge_request" else "#", 1)[1]),
            "url": None,
        }


def test_jira_comments_in_adf_then_edits(gateway_of: Callable[[str], Any]) -> None:
    created = fixture("jira", "issue_created")
    email = "factory@acme.example"
    jira = JiraApi(issues={"KAN-22"}, accounts={email: "ATATT3x-valid"})
    with jira.serve(), gateway_of("embedded") as world:
        run_id, _ = provider_run(
            world,
            "jira",
            lambda c: signing.jira(c["secret"], created),
            trigger("jira", "issue_created"),
            bot=JIRA_AGENT,
            email=email,
            api_token="ATATT3x-valid",
            api_base_url=jira.url,
        )
        work(Runner(world), run_id)
        reply = settled(world, run_id)
        ((comment_id, comment),) = jira.comments.items()
        assert comment["issue"] == "KAN-22" and comment["body"]["type"] == "doc"
        said = str(comment["body"])
        assert "finished" in said and PULL in said
        posts = jira.calls_to(r"/rest/api/3/issue/KAN-22/comment$")
        assert "Sirajudheen MK" in str(posts[0].body)  # who created the issue
        edits = jira.calls_to(rf"/rest/api/3/issue/KAN-22/comment/{comment_id}$")
        assert (len(posts), [c.method for c in edits]) == (1, ["PUT"])
        assert reply["target"] == {"provider": "jira", "issue_key": "KAN-22"}
        assert reply["link"] == f"{jira.url}/browse/KAN-22?focusedCommentId={comment_id}"


def outbox_states(world: World, run_id: str) -> list[str]:
    """The states of the run's reply messages, oldest first."""

    async def read(services: Services) -> list[str]:
        m = t.outbound_messages
        query = select(m.c.state).where(m.c.subject == run_id).order_by(m.c.created_at, m.c.id)
        async with services.database.read() as conn:
            return list((await conn.execute(query)).scalars())

    return world.client.run(read)


def continued_run(world: World, github: GitHubApi, examples: GithubExamples) -> Any:
    """The labeled example's run, claimed, with its start's comment posted: (its id, a
    function that continues it with a mention, the runner)."""
    set_repositories(world.client, world.factory_uid, "Codertocat/Hello-World")
    labeled = labeled_example(examples)
    run_id, connection = provider_run(
        world,
        "github",
        lambda c: octokit_signed(c["secret"], "issues", labeled, "d-1"),
        trigger("github", "issue_labeled"),
        api_token="ghp_valid",
        api_base_url=github.url,
    )
    runner = Runner(world)
    runner.claim()
    eventually(lambda: len(github.comments) == 1, timeout=30)

    def mention(text: str) -> None:
        example = next(p for p in examples["issue_comment"] if p["action"] == "created")
        comment = copy.deepcopy(example)
        comment["comment"]["body"] = text
        sent = octokit_signed(connection["secret"], "issue_comment", comment, "d-2")
        evaluated(world, connection, deliver(world.client, connection, sent))
        (again,) = runner.claim()
        assert again["run_id"] == run_id  # the same run, continued

    return run_id, mention, runner


EDITS = r"/repos/.*/issues/comments/\d+"


def test_a_follow_up_ends_again_and_the_newest_end_wins(
    gateway_of: Callable[[str], Any], github: GitHubApi, github_examples: GithubExamples
) -> None:
    """The run fails; the failure's edit is told to wait (429); meanwhile a mention continues
    the run and it succeeds, and that edit goes out first. The failure's edit, due later, is
    stale: the one message keeps the success."""
    with gateway_of("embedded") as world:
        run_id, mention, runner = continued_run(world, github, github_examples)
        github.answer_next(429, {"message": "slow down"}, {"Retry-After": "8"})
        runner.on(run_id, "finish", outcome="FAILED", status_message="First try failed.")
        eventually(lambda: len(github.calls_to(EDITS)) == 1, timeout=30)  # the 429
        mention("@fa please try again")
        runner.on(run_id, "finish", outcome="SUCCEEDED", status_message="Second try worked.")
        eventually(lambda: outbox_states(world, run_id) == ["delivered"] * 3, timeout=40)

        (body,) = [c["body"] for c in github.comments.values()]
        assert "finished" in body and "Second try worked." in body
        assert "failed" not in body and "First try" not in body
        patched = github.calls_to(EDITS)
        assert len(patched) == 2  # the 429 and the success; the stale failure is not sent
        assert "Second try worked." in patched[1].body["body"]
        assert len(github.calls_to(r"/repos/.*/issues/1/comments")) == 1  # one message


class HeldGitHubApi(GitHubApi):
    """GitHub, holding the first edit back until `release` (a slow network): the edit lands
    after whatever went out meanwhile."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.holding, self.release = threading.Event(), threading.Event()

    def handle(self, call: Call) -> Answer:
        if call.method == "PATCH" and not self.holding.is_set():
            self.holding.set()
            self.release.wait(30)
        return super().handle(call)


def test_an_edit_a_newer_end_overtook_is_made_again(
    gateway_of: Callable[[str], Any], github_examples: GithubExamples
) -> None:
    """The failure's edit is on its way (held by the network) when the continued run succeeds
    and that edit lands first; the failure's edit lands after it, and is followed by the
    success again: the message's last edit shows the newest end."""
    github = HeldGitHubApi(issues={ISSUE}, tokens={"ghp_valid"})
    with github.serve(), gateway_of("embedded") as world:
        run_id, mention, runner = continued_run(world, github, github_examples)
        runner.on(run_id, "finish", outcome="FAILED", status_message="First try failed.")
        eventually(github.holding.is_set, timeout=30)
        mention("@fa please try again")
        runner.on(run_id, "finish", outcome="SUCCEEDED", status_message="Second try worked.")
        edited(github, "Second try worked.")
        github.release.set()
        eventually(lambda: outbox_states(world, run_id) == ["delivered"] * 3, timeout=40)

        (body,) = [c["body"] for c in github.comments.values()]
        assert "finished" in body and "Second try worked." in body
        bodies = [c.body["body"] for c in github.calls_to(EDITS)]
        assert len(bodies) == 3 and "First try failed." in bodies[1]  # the late one
        assert "Second try worked." in bodies[2]  # made again


def test_no_credentials_no_reply(
    gateway_of: Callable[[str], Any], github: GitHubApi, github_examples: GithubExamples
) -> None:
    with gateway_of("embedded") as world:
        set_repositories(world.client, world.factory_uid, "Codertocat/Hello-World")
        automation(world, world.factory_uid, "triage", trigger("github", "issue_labeled"))
        connection = connect(world, "github")
        sent = octokit_signed(connection["secret"], "issues", labeled_example(github_examples), "x")
        delivery_id = deliver(world.client, connection, sent)
        evaluated(world, connection, delivery_id)
        (run,) = runs(world.client, delivery_id)
        work(Runner(world), run.run_id)
        time.sleep(0.5)
        assert replies_of(world, run.run_id) == [] and github.calls == []


# One message per run, whatever becomes of its start: a start that failed leaves the run's
# first end to post the message, and a second end that comes while that post is still retrying
# waits for it and edits it (not a second post); a run that ends before it ever started
# (cancelled while queued) posts at its end, and the start it makes when a follow-up resumes it
# posts nothing.

POSTS = r"/repos/.*/issues/1/comments$"


def mention(world: World, connection: dict[str, Any], examples: GithubExamples, n: int) -> None:
    """A comment naming the factory on the issue: a follow-up of its work item's run."""
    example = next(p for p in examples["issue_comment"] if p["action"] == "created")
    comment = copy.deepcopy(example)
    comment["comment"]["body"] = "@fa please try again"
    sent = octokit_signed(connection["secret"], "issue_comment", comment, f"d-mention-{n}")
    evaluated(world, connection, deliver(world.client, connection, sent))


def issue_run(
    world: World, github: GitHubApi, examples: GithubExamples, token: str = "ghp_valid"
) -> tuple[str, dict[str, Any]]:
    """The labeled example to a GitHub connection with reply credentials: its run, and the
    connection (with its secret, to sign more)."""
    set_repositories(world.client, world.factory_uid, "Codertocat/Hello-World")
    return provider_run(
        world,
        "github",
        lambda c: octokit_signed(c["secret"], "issues", labeled_example(examples), "d-1"),
        trigger("github", "issue_labeled"),
        api_token=token,
        api_base_url=github.url,
    )


@pytest.mark.parametrize("shape", ["embedded", "redis"])
def test_a_second_end_waits_for_the_first_ends_post(
    gateway_of: Callable[[str], Any], github: GitHubApi, github_examples: GithubExamples, shape: str
) -> None:
    with gateway_of(shape) as world:
        run_id, connection = issue_run(world, github, github_examples, token="ghp_revoked")
        runner = Runner(world)
        runner.claim()
        eventually(lambda: outbox_states(world, run_id) == ["failed"], timeout=30)  # the start
        path = f"/provider-connections/{connection['uid']}"
        assert world.api("PATCH", path, json={"api_token": "ghp_valid"}).status_code == 200
        # the first end's post is told to wait; meanwhile the run is continued and ends again
        github.answer_next(429, {"message": "slow down"}, {"Retry-After": "3"})
        runner.on(run_id, "finish", outcome="FAILED", status_message="First try failed.")
        eventually(lambda: len(github.calls_to(POSTS)) == 2, timeout=30)  # 401, then the 429
        mention(world, connection, github_examples, 1)
        (again,) = runner.claim()
        assert again["run_id"] == run_id
        runner.on(run_id, "finish", outcome="SUCCEEDED", status_message="Second try worked.")
        eventually(lambda: outbox_states(world, run_id) == ["failed"] + ["delivered"] * 2, 40)

        (body,) = [c["body"] for c in github.comments.values()]
        assert "Second try worked." in body
        assert len(github.calls_to(POSTS)) == 3  # the start's 401, the 429, the one post
        assert len(replies_of(world, run_id)) == 1
        # the second end edited the message the first one posted, or found it up to date
        assert all(c.method == "PATCH" for c in github.calls_to(EDITS))


@pytest.mark.parametrize("shape", ["embedded", "redis"])
def test_a_start_after_the_end_posts_nothing(
    gateway_of: Callable[[str], Any], github: GitHubApi, github_examples: GithubExamples, shape: str
) -> None:
    with gateway_of(shape) as world:
        run_id, connection = issue_run(world, github, github_examples)
        cancelled = world.api("POST", f"/agent/runs/{run_id}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        eventually(lambda: len(github.comments) == 1, timeout=30)  # the end posts
        (comment,) = github.comments.values()
        assert "cancelled" in comment["body"].lower()
        mention(world, connection, github_examples, 1)
        runner = Runner(world)
        (again,) = runner.claim()  # resumed: it starts now, after its end
        assert again["run_id"] == run_id
        runner.on(run_id, "finish", outcome="SUCCEEDED", status_message="Done after all.")
        eventually(lambda: outbox_states(world, run_id) == ["delivered"] * 2, timeout=30)

        (body,) = [c["body"] for c in github.comments.values()]
        assert "Done after all." in body
        assert len(github.calls_to(POSTS)) == 1
        assert [c.method for c in github.calls_to(EDITS)] == ["PATCH"]
