"""@-mentions as GitHub and GitLab read them."""

from __future__ import annotations

import pytest

from gateway.webhook_gateway.providers.mentions import github_mentions, gitlab_mentions


@pytest.mark.parametrize(
    ("body", "found"),
    [
        ("@octocat please", ["octocat"]),
        ("hey @octocat, and @OctoCat again", ["octocat", "OctoCat"]),
        ("(@a-b) [@c]", ["a-b", "c"]),
        ("@octo-org/core-team review", ["octo-org/core-team"]),
        ("mail me@example.com", []),
        ("not a login: @-x @x- ", []),
        ("code `@skip` and\n```\n@skip too\n```\nbut @this", ["this"]),
        ("unclosed ```\n@skip", []),
        ("", []),
        (None, []),
        ("@" + "a" * 39, ["a" * 39]),
        ("@" + "a" * 40, []),
    ],
)
def test_github(body: str | None, found: list[str]) -> None:
    assert github_mentions(body) == found


@pytest.mark.parametrize(
    ("body", "found"),
    [
        ("@warp.agent_1 rebase", ["warp.agent_1"]),
        ("thanks @bot.", ["bot"]),
        ("a@b.c and `@code`", []),
        ("@one @two @one", ["one", "two"]),
    ],
)
def test_gitlab(body: str, found: list[str]) -> None:
    assert gitlab_mentions(body) == found
