"""What a reply's template is given: the run, its agent, automation and factory, the event that
started it, and, once it ended, its outcome and artifacts (docs/providers.md#reply-templates).
The run lifecycle fills a `ReplyContext`; `variables()` is what templates see."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from msgspec import Struct

Phase = Literal["started", "ended"]
PHASES: tuple[Phase, ...] = ("started", "ended")
# how a run's state reads in a sentence after the agent's name, and its mark
OUTCOMES = {
    "SUCCEEDED": ("finished", "✅"),
    "FAILED": ("failed", "❌"),
    "ERROR": ("stopped on an error", "❌"),
    "CANCELLED": ("was cancelled", "🚫"),
    "BLOCKED": ("is blocked and needs a person", "⚠️"),
}
WORKING = ("is working on it", "🤖")


class Artifact(Struct, frozen=True, kw_only=True):
    """A pull request the run opened, or a file it produced."""

    kind: Literal["pull_request", "file"]
    title: str | None = None
    url: str | None = None
    branch: str | None = None


class ReplyContext(Struct, frozen=True, kw_only=True):
    phase: Phase
    run_id: str
    run_title: str
    run_url: str
    state: str
    agent: str
    factory: str
    automation: str | None = None
    event: str | None = None  # the trigger event: issue_labeled, app_mention, ...
    actor: str | None = None  # who caused it: the event's sender
    status_message: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    artifacts: tuple[Artifact, ...] = ()

    def variables(self) -> dict[str, Any]:
        outcome, icon = OUTCOMES.get(self.state, WORKING) if self.phase == "ended" else WORKING
        run = {
            "id": self.run_id,
            "title": self.run_title,
            "url": self.run_url,
            "state": self.state,
            "outcome": outcome,
            "icon": icon,
            "status_message": self.status_message,
            "started_at": _moment(self.started_at),
            "ended_at": _moment(self.ended_at),
            "duration": duration(self.started_at, self.ended_at),
        }
        artifacts = [_artifact(item) for item in ordered(self.artifacts)]
        return {
            "phase": self.phase,
            "run": run,
            "agent": {"name": self.agent},
            "automation": {"name": self.automation} if self.automation else None,
            "factory": {"name": self.factory},
            "event": {"kind": self.event, "actor": self.actor},
            "artifacts": artifacts,
            "pull_requests": [item for item in artifacts if item["kind"] == "pull_request"],
        }


def ordered(artifacts: tuple[Artifact, ...]) -> list[Artifact]:
    """Pull requests first, each kind in the order the run made them."""
    return sorted(artifacts, key=lambda item: item.kind != "pull_request")


def _artifact(item: Artifact) -> dict[str, Any]:
    title = item.title or item.branch or item.url or item.kind.replace("_", " ")
    return {"kind": item.kind, "title": title, "url": item.url, "branch": item.branch}


def _moment(at: datetime | None) -> str | None:
    return None if at is None else at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def duration(start: datetime | None, end: datetime | None) -> str | None:
    """`45s`, `4m 12s`, `1h 03m`, `2d 4h`: how long from start to end, None unless both."""
    if start is None or end is None:
        return None
    seconds = max(0, int((end - start).total_seconds()))
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    days, hour = divmod(hours, 24)
    if days:
        return f"{days}d {hour}h"
    if hours:
        return f"{hours}h {minute:02d}m"
    return f"{minutes}m {second:02d}s" if minutes else f"{second}s"


def sample(phase: Phase, *, full: bool = True) -> ReplyContext:
    """A context every template is tried on when it is written: with every value, and with the
    optional ones missing (`full=False`)."""
    start = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    ended = phase == "ended"
    pull = Artifact(kind="pull_request", title="Fix it", url="https://example.com/pr/1")
    return ReplyContext(
        phase=phase,
        run_id="run_sample",
        run_title="A sample run",
        run_url="https://gateway.example.com/console/runs/run_sample",
        state="SUCCEEDED" if ended else "INPROGRESS",
        agent="Foreman",
        factory="Factory",
        automation="triage" if full else None,
        event="issue_labeled" if full else None,
        actor="octocat" if full else None,
        status_message="Done." if ended and full else None,
        started_at=start,
        ended_at=start.replace(minute=9) if ended else None,
        artifacts=(pull, Artifact(kind="file", title="report.md")) if ended and full else (),
    )
