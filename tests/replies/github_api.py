"""GitHub's REST API for issue comments and App installation tokens, as its reference
describes them (docs.github.com/rest/issues/comments, /rest/apps/apps): the answers' shapes,
`Bad credentials` 401s, 404s for issues and comments that do not exist, and the App JWT checked
as GitHub checks it (RS256 over the app's public key, `iss`, at most 10 minutes)."""

from __future__ import annotations

import base64
import itertools
import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.padding import PKCS1v15
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from cryptography.hazmat.primitives.hashes import SHA256

from tests.replies.stand_in import Answer, Call, StandIn

DOCS = "https://docs.github.com/rest"
BAD_CREDENTIALS = {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"}


class GitHubApi(StandIn):
    routes = [
        ("POST", r"/repos/([^/]+)/([^/]+)/issues/(\d+)/comments", "create_comment"),
        ("PATCH", r"/repos/([^/]+)/([^/]+)/issues/comments/(\d+)", "update_comment"),
        ("POST", r"/app/installations/(\d+)/access_tokens", "installation_token"),
    ]

    def __init__(
        self, issues: set[str], tokens: set[str], clock: Callable[[], float] = time.time
    ) -> None:
        """`issues`: "owner/repo#number" that exist; `tokens`: the tokens GitHub takes."""
        super().__init__()
        self.clock = clock
        self.issues, self.tokens = issues, set(tokens)
        self.comments: dict[int, dict[str, Any]] = {}
        self.apps: dict[str, RSAPublicKey] = {}  # app id -> public key
        self.installations: dict[str, str] = {}  # installation id -> app id
        self.token_lifetime = timedelta(hours=1)
        self._ids = itertools.count(1_000_001)

    def create_comment(self, call: Call, match: re.Match[str]) -> Answer:
        owner, repo, number = match.groups()
        if not self._authorized(call):
            return Answer(401, BAD_CREDENTIALS)
        if f"{owner}/{repo}#{number}" not in self.issues:
            return Answer(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})
        if not isinstance(call.body, dict) or not isinstance(call.body.get("body"), str):
            return Answer(
                422, {"message": 'Invalid request.\n\n"body" wasn\'t supplied.', "status": "422"}
            )
        comment_id = next(self._ids)
        self.comments[comment_id] = {
            "repo": f"{owner}/{repo}",
            "number": int(number),
            "body": call.body["body"],
        }
        return Answer(201, self._comment(comment_id), {"Location": self._api_url(comment_id)})

    def update_comment(self, call: Call, match: re.Match[str]) -> Answer:
        owner, repo, comment_id = match.groups()
        if not self._authorized(call):
            return Answer(401, BAD_CREDENTIALS)
        comment = self.comments.get(int(comment_id))
        if comment is None or comment["repo"] != f"{owner}/{repo}":
            return Answer(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})
        comment["body"] = call.body["body"]
        return Answer(200, self._comment(int(comment_id)))

    def installation_token(self, call: Call, match: re.Match[str]) -> Answer:
        installation = match.group(1)
        app_id = self.installations.get(installation)
        if app_id is None:  # uninstalled, or never installed
            return Answer(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})
        problem = self._jwt_problem(call.headers.get("authorization", ""), app_id)
        if problem:
            return Answer(401, {"message": problem, "documentation_url": DOCS, "status": "401"})
        token = f"ghs_{next(self._ids)}"
        self.tokens.add(token)
        expires = datetime.fromtimestamp(self.clock(), UTC) + self.token_lifetime
        return Answer(201, {
            "token": token,
            "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "permissions": {"issues": "write", "pull_requests": "write"},
            "repository_selection": "all",
        })  # fmt: skip

    def _jwt_problem(self, authorization: str, app_id: str) -> str | None:
        """None when the JWT is one GitHub takes for `app_id`, else GitHub's word for it."""
        scheme, _, token = authorization.partition(" ")
        parts = token.split(".")
        if scheme != "Bearer" or len(parts) != 3:
            return "A JSON web token could not be decoded"
        header, claims = (json.loads(_unb64(part)) for part in parts[:2])
        try:
            self.apps[app_id].verify(
                _unb64(parts[2]), f"{parts[0]}.{parts[1]}".encode(), PKCS1v15(), SHA256()
            )
        except InvalidSignature:
            return "A JSON web token could not be decoded"
        now = self.clock()
        if header.get("alg") != "RS256" or str(claims.get("iss")) != app_id:
            return "'Issuer' claim ('iss') must be an Integer"
        if claims["exp"] - claims["iat"] > 600 or claims["exp"] <= now or claims["iat"] > now + 60:
            return "'Expiration time' claim ('exp') is too far in the future"
        return None

    def _authorized(self, call: Call) -> bool:
        scheme, _, token = call.headers.get("authorization", "").partition(" ")
        return scheme in ("Bearer", "token") and token in self.tokens

    def _api_url(self, comment_id: int) -> str:
        return f"{self.url}/repos/{self.comments[comment_id]['repo']}/issues/comments/{comment_id}"

    def _comment(self, comment_id: int) -> dict[str, Any]:
        comment = self.comments[comment_id]
        html = f"https://github.com/{comment['repo']}/issues/{comment['number']}#issuecomment-{comment_id}"
        return {
            "id": comment_id,
            "node_id": f"IC_{comment_id}",
            "url": self._api_url(comment_id),
            "html_url": html,
            "issue_url": f"{self.url}/repos/{comment['repo']}/issues/{comment['number']}",
            "body": comment["body"],
            "user": {"login": "factory[bot]", "id": 1, "type": "Bot"},
            "created_at": "2025-01-02T03:04:05Z",
            "updated_at": "2025-01-02T03:04:05Z",
            "author_association": "NONE",
        }


def _unb64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
