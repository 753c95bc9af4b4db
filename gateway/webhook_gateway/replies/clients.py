"""One reply client per provider behind one interface: create the run's message, or edit it."""

from __future__ import annotations

from typing import Protocol

from gateway.foundation.outbound.outcomes import Failed, Outcome
from gateway.webhook_gateway.replies.credentials import Credentials, api_root
from gateway.webhook_gateway.replies.github import GitHubReplies
from gateway.webhook_gateway.replies.github_app import InstallationTokens
from gateway.webhook_gateway.replies.gitlab import GitLabReplies
from gateway.webhook_gateway.replies.http import HttpClient
from gateway.webhook_gateway.replies.jira import JiraReplies
from gateway.webhook_gateway.replies.linear import LinearReplies
from gateway.webhook_gateway.replies.slack import SlackReplies
from gateway.webhook_gateway.replies.targets import ReplyTarget


class ReplyClient(Protocol):
    async def create(self, target: ReplyTarget, text: str) -> Outcome: ...

    async def update(self, target: ReplyTarget, message: str, text: str) -> Outcome: ...


def client_for(
    provider: str,
    http: HttpClient,
    credentials: Credentials,
    api_base_url: str | None,
    tokens: InstallationTokens,
) -> ReplyClient:
    """The client of `provider` with a connection's credentials and API root (ValueError for
    Jira without its site)."""
    api = api_root(provider, api_base_url)
    if provider == "github":
        return GitHubReplies(http, credentials, api, tokens)
    if provider == "gitlab":
        return GitLabReplies(http, credentials, api)
    if provider == "slack":
        return SlackReplies(http, credentials, api)
    if provider == "linear":
        return LinearReplies(http, credentials, api)
    if provider == "jira":
        return JiraReplies(http, credentials, api)
    raise ValueError(f"provider: {provider!r} has no replies")


async def post_or_edit(
    client: ReplyClient, target: ReplyTarget, text: str, message: str | None
) -> Outcome:
    """A new message, or `message` edited; when that message is gone (deleted by a person),
    a new one, so the outcome still reaches the thread."""
    if message is None:
        return await client.create(target, text)
    edited = await client.update(target, message, text)
    if isinstance(edited, Failed) and edited.gone:
        return await client.create(target, text)
    return edited
