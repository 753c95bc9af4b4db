"""What a scorer's `labels` and `passingScore` (factory-format.md §3.5) make of a reported
outcome: the attempt's score, its label and whether it passed.

A runner reports a `score`, a `label` (one of the scorer's: its score is the attempt's), or
both (the label must be one of the scorer's; the score is kept as reported). A score alone falls
in the label whose score is nearest to it (the lower one on a tie). It passes when it reaches the
passing score. A scorer without labels has no label; one without a passing score, no verdict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.kernel.errors import InvalidRequest


@dataclass(frozen=True)
class Judgement:
    score: float
    label: str | None
    passed: bool | None


def judge(
    score: float | None,
    label: str | None,
    labels: Sequence[dict[str, Any]] | None,
    passing_score: float | None,
) -> Judgement:
    """The attempt `score` and `label` make for a scorer of `labels` and `passing_score`; a
    400 naming `label` when it is none of the scorer's."""
    known = {str(entry["value"]): float(entry["score"]) for entry in labels or []}
    if label is not None:
        if label not in known:
            offered = ", ".join(sorted(known)) or "none"
            raise InvalidRequest(f"label: {label!r} is not a label of the scorer ({offered})")
        if score is None:
            score = known[label]
    if score is None:
        raise InvalidRequest("score: give a score or a label")
    if label is None and known:
        label = min(known, key=lambda value: (abs(known[value] - score), known[value]))
    passed = None if passing_score is None else score >= passing_score
    return Judgement(score, label, passed)
