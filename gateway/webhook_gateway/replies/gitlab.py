"""GitLab replies: a note on an issue or a merge request (REST v4), created with
`POST {api}/projects/{id}/{issues|merge_requests}/{iid}/notes` and edited with
`PUT .../notes/{note_id}`; a personal, project or group access token in `PRIVATE-TOKEN`."""

from __future__ import annotations

from urllib.parse import quote

from gateway.foundation.outbound.outcomes import Delivered, Failed, Outcome
from gateway.webhook_gateway.replies.credentials import Credentials
from gateway.webhook_gateway.replies.http import HttpClient, message_id, send_json
from gateway.webhook_gateway.replies.targets import GitLabThread, ReplyTarget, mismatch

COLLECTIONS = {"issue": "issues", "merge_request": "merge_requests"}


class GitLabReplies:
    def __init__(self, http: HttpClient, credentials: Credentials, api: str) -> None:
        self._http, self._token, self._api = http, credentials.api_token or "", api

    async def create(self, target: ReplyTarget, text: str) -> Outcome:
        if not isinstance(target, GitLabThread):
            return Failed(error=mismatch(target, "GitLab"))
        return await self._send("POST", target, _notes(target), text)

    async def update(self, target: ReplyTarget, message: str, text: str) -> Outcome:
        if not isinstance(target, GitLabThread):
            return Failed(error=mismatch(target, "GitLab"))
        return await self._send("PUT", target, f"{_notes(target)}/{quote(message)}", text)

    async def _send(self, method: str, target: GitLabThread, path: str, text: str) -> Outcome:
        headers = {"PRIVATE-TOKEN": self._token, "Accept": "application/json"}
        answer = await send_json(self._http, method, self._api + path, headers, {"body": text})
        if not isinstance(answer, dict):
            return answer
        made = message_id(answer)
        if isinstance(made, Failed):
            return made
        return Delivered(message_id=made, url=f"{target.url}#note_{made}" if target.url else None)


def _notes(target: GitLabThread) -> str:
    """A project by id or by its full path, which GitLab takes URL-encoded (`group%2Fproject`)."""
    project = quote(target.project, safe="")
    return f"/projects/{project}/{COLLECTIONS[target.kind]}/{target.iid}/notes"
