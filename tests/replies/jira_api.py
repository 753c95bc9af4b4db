"""Jira Cloud's REST API v3 for issue comments, as its reference describes it
(developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-comments): Basic auth
(email:API token), the body an Atlassian Document Format document, checked against
Atlassian's own JSON schema (@atlaskit/adf-schema) as Jira refuses an invalid one."""

from __future__ import annotations

import base64
import itertools
import json
import re
from functools import cache
from typing import Any

import jsonschema

from tests.npm_packages import node_modules
from tests.replies.stand_in import Answer, Call, StandIn

NO_ISSUE = "Issue does not exist or you do not have permission to see it."


@cache
def adf_schema() -> Any:
    path = node_modules() / "@atlaskit" / "adf-schema" / "dist" / "json-schema" / "v1" / "full.json"
    schema = json.loads(path.read_text())
    return jsonschema.validators.validator_for(schema)(schema)


def adf_problems(document: Any) -> list[str]:
    return [error.message for error in adf_schema().iter_errors(document)]


class JiraApi(StandIn):
    routes = [
        ("POST", r"/rest/api/3/issue/([^/]+)/comment", "create"),
        ("PUT", r"/rest/api/3/issue/([^/]+)/comment/([^/]+)", "update"),
    ]

    def __init__(self, issues: set[str], accounts: dict[str, str]) -> None:
        """`accounts`: email -> API token."""
        super().__init__()
        self.issues, self.accounts = issues, accounts
        self.comments: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(10_000)

    def create(self, call: Call, match: re.Match[str]) -> Answer:
        refused = self._refusal(call, match.group(1))
        if refused:
            return refused
        comment_id = str(next(self._ids))
        self.comments[comment_id] = {"issue": match.group(1), "body": call.body["body"]}
        return Answer(201, self._comment(comment_id))

    def update(self, call: Call, match: re.Match[str]) -> Answer:
        refused = self._refusal(call, match.group(1))
        if refused:
            return refused
        comment = self.comments.get(match.group(2))
        if comment is None or comment["issue"] != match.group(1):
            return Answer(
                404,
                {
                    "errorMessages": ["Can not find a comment for the id: " + match.group(2)],
                    "errors": {},
                },
            )
        comment["body"] = call.body["body"]
        return Answer(200, self._comment(match.group(2)))

    def _refusal(self, call: Call, issue: str) -> Answer | None:
        scheme, _, encoded = call.headers.get("authorization", "").partition(" ")
        email, _, token = (
            base64.b64decode(encoded or "").decode().partition(":")
            if scheme == "Basic"
            else ("", "", "")
        )
        if not email or self.accounts.get(email) != token:
            return Answer(401, "Client must be authenticated to access this resource.")
        if issue not in self.issues:
            return Answer(404, {"errorMessages": [NO_ISSUE], "errors": {}})
        body = call.body.get("body") if isinstance(call.body, dict) else None
        if body is None or adf_problems(body):
            return Answer(
                400, {"errorMessages": [], "errors": {"comment": "Comment body is not valid!"}}
            )
        return None

    def _comment(self, comment_id: str) -> dict[str, Any]:
        comment = self.comments[comment_id]
        return {
            "self": f"{self.url}/rest/api/3/issue/10010/comment/{comment_id}",
            "id": comment_id,
            "author": {"accountId": "5b10a2844c20165700ede21g", "displayName": "Factory"},
            "body": comment["body"],
            "created": "2025-01-02T03:04:05.000+0000",
            "updated": "2025-01-02T03:04:05.000+0000",
            "jsdPublic": True,
        }
