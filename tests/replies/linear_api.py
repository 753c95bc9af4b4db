"""Linear's GraphQL API for comments, as its reference describes it (linear.app/developers):
one endpoint, `commentCreate` / `commentUpdate` mutations, personal API keys sent as they are
(OAuth tokens as Bearer), errors as GraphQL `errors` with `extensions.code`. Linear's own SDK
(`@linear/sdk`, tests/node_modules) is the oracle that it answers as Linear does."""

from __future__ import annotations

import itertools
import re
import uuid
from typing import Any

from tests.replies.stand_in import Answer, Call, StandIn


class LinearApi(StandIn):
    routes = [("POST", r"/graphql", "graphql")]

    def __init__(self, issues: set[str], keys: set[str]) -> None:
        super().__init__()
        self.issues, self.keys = issues, keys
        self.comments: dict[str, dict[str, Any]] = {}
        self._sync = itertools.count(1000)

    def graphql(self, call: Call, _: re.Match[str]) -> Answer:
        if call.headers.get("authorization") not in self.keys:
            return _errors(
                400, "AUTHENTICATION_ERROR", "Authentication required, not authenticated"
            )
        query = str((call.body or {}).get("query", ""))
        variables = (call.body or {}).get("variables") or {}
        if re.search(r"\bcommentCreate\s*\(", query):
            return self._create(variables.get("input") or {})
        if re.search(r"\bcommentUpdate\s*\(", query):
            return self._update(str(variables.get("id")), variables.get("input") or {})
        return _errors(400, "GRAPHQL_VALIDATION_FAILED", "Cannot query this field")

    def _create(self, given: dict[str, Any]) -> Answer:
        if given.get("issueId") not in self.issues:
            return _errors(200, "INVALID_INPUT", "Entity not found: Issue")
        comment_id = str(uuid.uuid4())
        self.comments[comment_id] = {"issueId": given["issueId"], "body": given.get("body", "")}
        return Answer(200, {"data": {"commentCreate": self._payload(comment_id)}})

    def _update(self, comment_id: str, given: dict[str, Any]) -> Answer:
        if comment_id not in self.comments:
            return _errors(200, "INVALID_INPUT", "Entity not found: Comment")
        self.comments[comment_id]["body"] = given.get("body", "")
        return Answer(200, {"data": {"commentUpdate": self._payload(comment_id)}})

    def _payload(self, comment_id: str) -> dict[str, Any]:
        """Every field the SDK's and the gateway's selections ask for."""
        url = f"https://linear.app/acme/issue/ENG-1#comment-{comment_id[:8]}"
        return {
            "__typename": "CommentPayload",
            "lastSyncId": next(self._sync),
            "success": True,
            "comment": {"__typename": "Comment", "id": comment_id, "url": url},
        }


def _errors(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Answer:
    error = {
        "message": message,
        "extensions": {"type": code.lower(), "code": code, "userPresentableMessage": message},
    }
    return Answer(status, {"data": None, "errors": [error]}, headers or {})


def rate_limited(reset_ms: int) -> Answer:
    return _errors(
        400, "RATELIMITED", "Rate limit exceeded", {"X-RateLimit-Requests-Reset": str(reset_ms)}
    )
