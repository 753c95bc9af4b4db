"""GitHub replies: one comment on an issue or a pull request (REST: pull requests are issues
there), created with `POST {api}/repos/{owner}/{repo}/issues/{number}/comments` and edited with
`PATCH {api}/repos/{owner}/{repo}/issues/comments/{id}`. A token, or a GitHub App's
installation token (github_app.py)."""

from __future__ import annotations

from urllib.parse import quote

from gateway.foundation.outbound.outcomes import Delivered, Failed, Outcome, RetryLater
from gateway.webhook_gateway.replies.credentials import Credentials
from gateway.webhook_gateway.replies.github_app import API_VERSION, InstallationTokens
from gateway.webhook_gateway.replies.http import HttpClient, message_id, send_json
from gateway.webhook_gateway.replies.targets import GitHubThread, ReplyTarget, mismatch


class GitHubReplies:
    def __init__(
        self, http: HttpClient, credentials: Credentials, api: str, tokens: InstallationTokens
    ) -> None:
        self._http, self._credentials, self._api, self._tokens = http, credentials, api, tokens

    async def create(self, target: ReplyTarget, text: str) -> Outcome:
        if not isinstance(target, GitHubThread):
            return Failed(error=mismatch(target, "GitHub"))
        return await self._send("POST", f"{_repo(target)}/issues/{target.number}/comments", text)

    async def update(self, target: ReplyTarget, message: str, text: str) -> Outcome:
        if not isinstance(target, GitHubThread):
            return Failed(error=mismatch(target, "GitHub"))
        return await self._send("PATCH", f"{_repo(target)}/issues/comments/{quote(message)}", text)

    async def _send(self, method: str, path: str, text: str) -> Outcome:
        authorization = await self._authorization()
        if not isinstance(authorization, tuple):
            return authorization
        token, fresh = authorization
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
        }
        answer = await send_json(self._http, method, self._api + path, headers, {"body": text})
        if isinstance(answer, Failed) and answer.status == 401 and fresh is not None:
            return self._refused_token(answer, fresh)
        if not isinstance(answer, dict):
            return answer
        made = message_id(answer)
        if isinstance(made, Failed):
            return made
        url = answer.get("html_url")
        return Delivered(message_id=made, url=url if isinstance(url, str) else None)

    async def _authorization(self) -> tuple[str, bool | None] | RetryLater | Failed:
        """(token, fresh): `fresh` None for a token of the connection, else whether the
        installation token was exchanged just now."""
        given = self._credentials
        if given.api_token is not None:
            return given.api_token, None
        if given.app_id is None or given.private_key is None or given.installation_id is None:
            return Failed(error="the connection has no GitHub credentials")
        return await self._tokens.token(
            self._http, self._api, given.app_id, given.private_key, given.installation_id
        )

    def _refused_token(self, refused: Failed, fresh: bool) -> Outcome:
        """An installation token GitHub no longer takes is dropped; one from the cache is worth
        one more try with a new one, a new one refused is final."""
        given = self._credentials
        self._tokens.forget(self._api, given.app_id or "", given.installation_id or "")
        return refused if fresh else RetryLater(error=refused.error, after=0.0)


def _repo(target: GitHubThread) -> str:
    owner, _, name = target.repository.partition("/")
    return f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}"
