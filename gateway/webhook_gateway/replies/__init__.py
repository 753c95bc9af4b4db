"""Replies to providers: what a run posts where its work came from (a GitHub or GitLab comment,
a Slack thread message, a Linear or Jira comment), the API clients that post and edit it, the
credentials they need, and the templates of its text (docs/providers.md#replies)."""

from gateway.foundation.outbound.outcomes import Delivered, Failed, Outcome, RetryLater
from gateway.webhook_gateway.replies.clients import ReplyClient, client_for, post_or_edit
from gateway.webhook_gateway.replies.context import Artifact, ReplyContext
from gateway.webhook_gateway.replies.credentials import Credentials
from gateway.webhook_gateway.replies.github_app import InstallationTokens
from gateway.webhook_gateway.replies.http import HttpClient
from gateway.webhook_gateway.replies.targets import (
    GitHubThread,
    GitLabThread,
    JiraIssue,
    LinearIssue,
    ReplyTarget,
    SlackThread,
)
from gateway.webhook_gateway.replies.templates import ReplyTemplates

__all__ = [
    "Artifact",
    "Credentials",
    "Delivered",
    "Failed",
    "GitHubThread",
    "GitLabThread",
    "HttpClient",
    "InstallationTokens",
    "JiraIssue",
    "LinearIssue",
    "Outcome",
    "ReplyClient",
    "ReplyContext",
    "ReplyTarget",
    "ReplyTemplates",
    "RetryLater",
    "SlackThread",
    "client_for",
    "post_or_edit",
]
