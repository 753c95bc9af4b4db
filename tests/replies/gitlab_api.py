"""GitLab's REST API v4 for notes, as its reference describes it (docs.gitlab.com/api/notes):
projects by id or URL-encoded path, `PRIVATE-TOKEN`, `{"message": "401 Unauthorized"}`."""

from __future__ import annotations

import itertools
import re
from typing import Any
from urllib.parse import unquote

from tests.replies.stand_in import Answer, Call, StandIn

NOTES = r"/api/v4/projects/([^/]+)/(issues|merge_requests)/(\d+)/notes"


class GitLabApi(StandIn):
    routes = [("POST", NOTES, "create"), ("PUT", NOTES + r"/(\d+)", "update")]

    def __init__(self, threads: set[str], tokens: set[str]) -> None:
        """`threads`: "group/project#iid" (issues) and "group/project!iid" (merge requests)."""
        super().__init__()
        self.threads, self.tokens = threads, tokens
        self.notes: dict[int, dict[str, Any]] = {}
        self._ids = itertools.count(302)

    def create(self, call: Call, match: re.Match[str]) -> Answer:
        refused = self._refusal(call, match)
        if refused:
            return refused
        note_id = next(self._ids)
        self.notes[note_id] = {"thread": _thread(match), "body": call.body["body"]}
        return Answer(201, self._note(note_id, match))

    def update(self, call: Call, match: re.Match[str]) -> Answer:
        refused = self._refusal(call, match)
        if refused:
            return refused
        note = self.notes.get(int(match.group(4)))
        if note is None or note["thread"] != _thread(match):
            return Answer(404, {"message": "404 Not found"})
        note["body"] = call.body["body"]
        return Answer(200, self._note(int(match.group(4)), match))

    def _refusal(self, call: Call, match: re.Match[str]) -> Answer | None:
        if call.headers.get("private-token") not in self.tokens:
            return Answer(401, {"message": "401 Unauthorized"})
        if _thread(match) not in self.threads:
            return Answer(404, {"message": "404 Not found"})
        if not isinstance(call.body, dict) or not call.body.get("body"):
            return Answer(400, {"error": "body is missing"})
        return None

    def _note(self, note_id: int, match: re.Match[str]) -> dict[str, Any]:
        kind = "Issue" if match.group(2) == "issues" else "MergeRequest"
        return {
            "id": note_id,
            "type": None,
            "body": self.notes[note_id]["body"],
            "author": {"id": 1, "username": "factory-bot"},
            "system": False,
            "noteable_type": kind,
            "noteable_iid": int(match.group(3)),
            "created_at": "2025-01-02T03:04:05.000Z",
        }


def _thread(match: re.Match[str]) -> str:
    mark = "#" if match.group(2) == "issues" else "!"
    return f"{unquote(match.group(1))}{mark}{match.group(3)}"
