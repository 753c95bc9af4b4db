"""A run's page lists its replies to the provider (where, state, the messages sent, calls, the
message's link) and its artifacts: a GitHub issue's run against a stand-in of GitHub's API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.connections.test_run_replies import PULL, github_run, settled, work
from tests.console.test_console_pages import login
from tests.platform.runners.test_runner_api import Runner
from tests.providers.conftest import GithubExamples
from tests.replies.github_api import GitHubApi


def test_a_run_page_shows_its_reply_and_its_pull_request(
    gateway_of: Callable[[str], Any], github: GitHubApi, github_examples: GithubExamples
) -> None:
    with gateway_of("embedded") as world:
        run_id, _ = github_run(world, github, github_examples)
        login(world.client, world.user_key)
        before = world.client.get(f"/console/runs/{run_id}").text
        assert "Replies to the provider" in before and "None yet." in before
        work(Runner(world), run_id)
        reply = settled(world, run_id)
        page = world.client.get(f"/console/runs/{run_id}").text
        replies = page.split('<table class="replies">')[1].split("</table>")[0]
        assert "repository Codertocat/Hello-World, number 1" in replies
        assert "delivered" in replies and f'href="{reply["link"]}"' in replies
        assert "posted when the run started; updated when it SUCCEEDED" in replies
        assert "data-final" in world.client.get(f"/console/runs/{run_id}/live").text
        assert f'href="{PULL}"' in page and "Fix the spelling" in page  # the artifact
