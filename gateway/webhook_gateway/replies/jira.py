"""Jira Cloud replies: a comment on an issue (REST v3), created with
`POST {site}/rest/api/3/issue/{key}/comment` and edited with `PUT .../comment/{id}`; the body is
an Atlassian Document Format document (adf.py), the auth Basic `email:api_token`."""

from __future__ import annotations

import base64
from urllib.parse import quote

from gateway.foundation.outbound.outcomes import Delivered, Failed, Outcome
from gateway.webhook_gateway.replies.adf import document
from gateway.webhook_gateway.replies.credentials import Credentials
from gateway.webhook_gateway.replies.http import HttpClient, message_id, send_json
from gateway.webhook_gateway.replies.targets import JiraIssue, ReplyTarget, mismatch


class JiraReplies:
    def __init__(self, http: HttpClient, credentials: Credentials, site: str) -> None:
        pair = f"{credentials.email or ''}:{credentials.api_token or ''}".encode()
        self._http, self._site = http, site
        self._headers = {
            "Authorization": "Basic " + base64.b64encode(pair).decode(),
            "Accept": "application/json",
        }

    async def create(self, target: ReplyTarget, text: str) -> Outcome:
        if not isinstance(target, JiraIssue):
            return Failed(error=mismatch(target, "Jira"))
        return await self._send("POST", target, "", text)

    async def update(self, target: ReplyTarget, message: str, text: str) -> Outcome:
        if not isinstance(target, JiraIssue):
            return Failed(error=mismatch(target, "Jira"))
        return await self._send("PUT", target, "/" + quote(message, safe=""), text)

    async def _send(self, method: str, target: JiraIssue, comment: str, text: str) -> Outcome:
        key = quote(target.issue_key, safe="")
        url = f"{self._site}/rest/api/3/issue/{key}/comment{comment}"
        answer = await send_json(self._http, method, url, self._headers, {"body": document(text)})
        if not isinstance(answer, dict):
            return answer
        made = message_id(answer)
        if isinstance(made, Failed):
            return made
        link = f"{self._site}/browse/{key}?focusedCommentId={made}"
        return Delivered(message_id=made, url=link)
