"""Linear replies: a comment on an issue through the GraphQL API (`commentCreate`, then
`commentUpdate`). Linear answers GraphQL errors with `errors` (HTTP 200 or 400); the error's
`extensions.code` decides whether another try can help."""

from __future__ import annotations

from typing import Any

import httpx

from gateway.foundation.outbound.outcomes import Delivered, Failed, Outcome, RetryLater
from gateway.webhook_gateway.replies.credentials import Credentials
from gateway.webhook_gateway.replies.http import HttpClient, call, json_object, refusal, retry_after
from gateway.webhook_gateway.replies.targets import LinearIssue, ReplyTarget, mismatch

CREATE = """mutation CommentCreate($input: CommentCreateInput!) {
  commentCreate(input: $input) { success comment { id url } }
}"""
UPDATE = """mutation CommentUpdate($id: String!, $input: CommentUpdateInput!) {
  commentUpdate(id: $id, input: $input) { success comment { id url } }
}"""
RETRYABLE = frozenset({"RATELIMITED", "INTERNAL_SERVER_ERROR"})
GONE = frozenset({"ENTITY_NOT_FOUND"})
# OAuth access tokens go as Bearer; personal API keys (lin_api_...) as they are
OAUTH_PREFIX = "lin_oauth_"


class LinearReplies:
    def __init__(self, http: HttpClient, credentials: Credentials, api: str) -> None:
        token = credentials.api_token or ""
        self._http, self._api = http, api
        self._headers = {
            "Authorization": f"Bearer {token}" if token.startswith(OAUTH_PREFIX) else token,
            "Content-Type": "application/json",
        }

    async def create(self, target: ReplyTarget, text: str) -> Outcome:
        if not isinstance(target, LinearIssue):
            return Failed(error=mismatch(target, "Linear"))
        variables = {"input": {"issueId": target.issue_id, "body": text}}
        return await self._mutate("commentCreate", CREATE, variables)

    async def update(self, target: ReplyTarget, message: str, text: str) -> Outcome:
        if not isinstance(target, LinearIssue):
            return Failed(error=mismatch(target, "Linear"))
        variables = {"id": message, "input": {"body": text}}
        return await self._mutate("commentUpdate", UPDATE, variables)

    async def _mutate(self, field: str, query: str, variables: dict[str, Any]) -> Outcome:
        body = {"query": query, "variables": variables}
        response = await call(self._http, "POST", self._api, self._headers, body)
        if not isinstance(response, httpx.Response):
            return response
        answer = json_object(response)
        if isinstance(answer, Failed):
            return refusal(response) or answer
        if answer.get("errors"):
            return _graphql_error(answer["errors"], response)
        return refusal(response) or _delivered(field, answer)


def _delivered(field: str, answer: dict[str, Any]) -> Outcome:
    payload = _member(_member(answer, "data"), field)
    comment = _member(payload, "comment")
    if payload.get("success") is not True or not isinstance(comment.get("id"), str):
        return Failed(error=f"{field}: Linear did not report success")
    url = comment.get("url")
    return Delivered(message_id=comment["id"], url=url if isinstance(url, str) else None)


def _member(value: dict[str, Any], key: str) -> dict[str, Any]:
    """The object under `key`, or an empty one when there is none."""
    found = value.get(key)
    return found if isinstance(found, dict) else {}


def _graphql_error(errors: Any, response: httpx.Response) -> RetryLater | Failed:
    listed = errors if isinstance(errors, list) else [errors]
    first = listed[0] if listed and isinstance(listed[0], dict) else {}
    extensions = _member(first, "extensions")
    code = str(extensions.get("code") or "")
    message = str(extensions.get("userPresentableMessage") or first.get("message") or errors)
    error = f"{code or response.status_code}: {message}"[:300]
    if code in RETRYABLE or response.status_code >= 500:
        return RetryLater(error=error, after=retry_after(response.headers))
    gone = code in GONE or "not found" in message.lower()
    return Failed(error=error, gone=gone, status=response.status_code)
