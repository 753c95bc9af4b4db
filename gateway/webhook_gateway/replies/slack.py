"""Slack replies: a message in the thread of the message that started the run
(`chat.postMessage` with `thread_ts`), edited with `chat.update`; a bot token (`xoxb-`).

Slack answers most refusals with HTTP 200 and `{"ok": false, "error": "<code>"}`: the code
decides whether another try can help."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import httpx

from gateway.foundation.outbound.outcomes import Delivered, Failed, Outcome, RetryLater
from gateway.webhook_gateway.replies.credentials import Credentials
from gateway.webhook_gateway.replies.http import HttpClient, call, json_object, refusal, retry_after
from gateway.webhook_gateway.replies.targets import ReplyTarget, SlackThread, mismatch

# codes Slack documents as passing trouble on its side, or a rate limit
RETRYABLE = frozenset(
    {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)
# the message to edit, or the channel or thread it was in, is gone
GONE = frozenset({"message_not_found", "channel_not_found", "thread_not_found", "is_archived"})


class SlackReplies:
    def __init__(self, http: HttpClient, credentials: Credentials, api: str) -> None:
        self._http, self._api = http, api
        self._headers = {
            "Authorization": f"Bearer {credentials.bot_token or ''}",
            "Content-Type": "application/json; charset=utf-8",
        }

    async def create(self, target: ReplyTarget, text: str) -> Outcome:
        if not isinstance(target, SlackThread):
            return Failed(error=mismatch(target, "Slack"))
        body = {"channel": target.channel, "thread_ts": target.thread_ts, "text": text}
        answer = await self._call("chat.postMessage", body)
        if not isinstance(answer, dict):
            return answer
        posted = answer.get("ts")
        if not isinstance(posted, str):
            return Failed(error="chat.postMessage answered no ts")
        channel = answer.get("channel") if isinstance(answer.get("channel"), str) else None
        return Delivered(
            message_id=posted, url=await self._permalink(channel or target.channel, posted)
        )

    async def update(self, target: ReplyTarget, message: str, text: str) -> Outcome:
        if not isinstance(target, SlackThread):
            return Failed(error=mismatch(target, "Slack"))
        answer = await self._call(
            "chat.update", {"channel": target.channel, "ts": message, "text": text}
        )
        if not isinstance(answer, dict):
            return answer
        return Delivered(message_id=message, url=await self._permalink(target.channel, message))

    async def _permalink(self, channel: str, ts: str) -> str | None:
        """The message's link, when Slack gives it (a failure here loses nothing: the message
        is posted)."""
        query = urlencode({"channel": channel, "message_ts": ts})
        answer = await self._call(f"chat.getPermalink?{query}", None)
        link = answer.get("permalink") if isinstance(answer, dict) else None
        return link if isinstance(link, str) else None

    async def _call(
        self, method: str, body: dict[str, str] | None
    ) -> dict[str, Any] | RetryLater | Failed:
        verb = "GET" if body is None else "POST"
        response = await call(self._http, verb, f"{self._api}/{method}", self._headers, body)
        if not isinstance(response, httpx.Response):
            return response
        refused = refusal(response)
        if refused is not None:
            return refused
        answer = json_object(response)
        if isinstance(answer, dict) and answer.get("ok") is not True:
            return _refused(method, answer, response)
        return answer


def _refused(method: str, answer: dict[str, Any], response: httpx.Response) -> RetryLater | Failed:
    code = str(answer.get("error") or "ok is not true")
    error = f"{method.partition('?')[0]}: {code}"
    if code in RETRYABLE:
        return RetryLater(error=error, after=retry_after(response.headers))
    return Failed(error=error, gone=code in GONE, status=response.status_code)
