"""What a runner clones a repository with when a provider connection started its run
(docs/runners.md#a-working-copy): the connection's own credentials made into a token for that
one repository. A GitHub App's is an installation token for the repository alone, reading its
contents only, that lapses within the hour; an `api_token` (GitHub or GitLab) is handed on as it
is, for git to send to the repository's origin alone: the forges mint nothing shorter from one.

`CheckoutCredentials.token` never raises for what the forge or the network did: a failure is an
outcome (Failed, RetryLater) and the run is cloned as it would be without the connection."""

from __future__ import annotations

from datetime import datetime

from gateway.webhook_gateway.connections.reply_settings import ReplySettings
from gateway.webhook_gateway.replies import Failed, HttpClient, InstallationTokens, RetryLater
from gateway.webhook_gateway.replies.credentials import api_root

CLONING = frozenset({"github", "gitlab"})  # the providers whose connections clone repositories


class CheckoutCredentials:
    """One per API process: the HTTP client the App tokens are exchanged over (the outbound
    package's, which refuses private addresses unless allowed) and their cache."""

    def __init__(self, http: HttpClient) -> None:
        self._http = http
        self._tokens = InstallationTokens()

    async def token(
        self, provider: str, settings: ReplySettings, owner: str, name: str
    ) -> tuple[str, datetime | None] | RetryLater | Failed:
        """(token, when it lapses: None for a connection's own token) for cloning
        `owner`/`name` with the connection's credentials."""
        given = settings.credentials
        if provider not in CLONING:
            return Failed(error=f"{provider} connections clone no repositories")
        if given.api_token is not None:
            return given.api_token, None
        if provider == "github" and given.app_id and given.private_key and given.installation_id:
            api = api_root(provider, settings.api_base_url)
            return await self._tokens.repository_token(
                self._http, api, given.app_id, given.private_key, given.installation_id, name
            )
        return Failed(error="the connection has no credentials to clone with")


def usable(provider: str, settings: ReplySettings) -> bool:
    """Whether the connection's credentials can clone: an api_token, or a GitHub App."""
    given = settings.credentials
    if provider not in CLONING:
        return False
    app = provider == "github" and bool(
        given.app_id and given.private_key and given.installation_id
    )
    return given.api_token is not None or app
