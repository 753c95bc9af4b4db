"""Slack's Web API for replies, as its reference describes it (api.slack.com/methods/
chat.postMessage, chat.update, chat.getPermalink): JSON or form bodies, `{"ok": false, "error"}`
with HTTP 200 for refusals, 429 with Retry-After when rate limited. slack_sdk's own client
(`WebClient(base_url=...)`) is the oracle that it answers as Slack does (test_slack.py)."""

from __future__ import annotations

import itertools
import re
from typing import Any

from tests.replies.stand_in import Answer, Call, StandIn


class SlackApi(StandIn):
    routes = [
        ("POST", r"/api/chat\.postMessage", "post_message"),
        ("POST", r"/api/chat\.update", "update"),
        ("GET", r"/api/chat\.getPermalink", "permalink"),
        ("POST", r"/api/chat\.getPermalink", "permalink"),
    ]

    def __init__(self, channels: set[str], tokens: set[str]) -> None:
        super().__init__()
        self.channels, self.tokens = channels, tokens
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self._ts = itertools.count(1)

    def post_message(self, call: Call, _: re.Match[str]) -> Answer:
        args = self._args(call)
        refused = self._refusal(call, args)
        if refused:
            return refused
        if not args.get("text"):
            return _error("no_text")
        ts = f"1700000000.{next(self._ts):06d}"
        message = {"type": "message", "user": "U0BOT", "text": args["text"], "ts": ts}
        if args.get("thread_ts"):
            message["thread_ts"] = args["thread_ts"]
        self.messages[(args["channel"], ts)] = message
        return Answer(200, {"ok": True, "channel": args["channel"], "ts": ts, "message": message})

    def update(self, call: Call, _: re.Match[str]) -> Answer:
        args = self._args(call)
        refused = self._refusal(call, args)
        if refused:
            return refused
        message = self.messages.get((args["channel"], str(args.get("ts"))))
        if message is None:
            return _error("message_not_found")
        message["text"] = args.get("text", "")
        body = {
            "ok": True,
            "channel": args["channel"],
            "ts": args["ts"],
            "text": message["text"],
            "message": message,
        }
        return Answer(200, body)

    def permalink(self, call: Call, _: re.Match[str]) -> Answer:
        args = self._args(call)
        refused = self._refusal(call, args)
        if refused:
            return refused
        ts = str(args.get("message_ts"))
        if (args["channel"], ts) not in self.messages:
            return _error("message_not_found")
        link = f"https://acme.slack.com/archives/{args['channel']}/p{ts.replace('.', '')}"
        return Answer(200, {"ok": True, "channel": args["channel"], "permalink": link})

    def _args(self, call: Call) -> dict[str, Any]:
        return {**call.query, **(call.body if isinstance(call.body, dict) else {})}

    def _refusal(self, call: Call, args: dict[str, Any]) -> Answer | None:
        scheme, _, token = call.headers.get("authorization", "").partition(" ")
        if scheme != "Bearer" or not token:
            return _error("not_authed")
        if token not in self.tokens:
            return _error("invalid_auth")
        if args.get("channel") not in self.channels:
            return _error("channel_not_found")
        return None


def _error(code: str) -> Answer:
    return Answer(200, {"ok": False, "error": code})
