"""scorers/<name>/scorer.md -> Scorer: the name the directory gives, unique label values, a
passing and a failing label, a rubric, agents declared in the tree."""

from __future__ import annotations

from typing import Any

from ..codes import Code
from ..diagnostics import show
from ..documents import Document
from ..model import Scorer, ScorerLabel
from .context import BuildContext

__all__ = ["build_scorer"]


def build_scorer(doc: Document, ctx: BuildContext) -> Scorer | None:
    ok = _check_agents(doc, ctx)
    if not doc.clean():
        return None
    raw = doc.value
    ok = _check_name(doc, raw, ctx) & _check_labels(doc, raw, ctx) & ok
    if not (doc.body or "").strip():
        doc.report(
            ctx.sink,
            (),
            Code.EMPTY_BODY,
            "the scorer's rubric is empty: write it below the closing `---`",
        )
        ok = False
    if not ok:
        return None
    ctx.defer("model", raw["model"], doc, ("model",))
    return Scorer(
        name=doc.name,
        path=doc.path,
        description=raw.get("description"),
        agents=tuple(a.strip() for a in raw["agents"]),
        enabled=raw.get("enabled", True),
        output=raw.get("output", "classification"),
        labels=tuple(
            ScorerLabel(
                value=label["value"],
                score=float(label["score"]),
                description=label.get("description"),
            )
            for label in raw["labels"]
        ),
        passing_score=float(raw["passingScore"]),
        sampling_rate=float(raw.get("samplingRate", 25)),
        model=raw["model"],
        self_improvement=raw.get("selfImprovement", False),
        rubric=doc.body or "",
    )


def _check_agents(doc: Document, ctx: BuildContext) -> bool:
    ok = True
    for index, agent in enumerate(doc.get(("agents",)) or []):
        if agent.strip() not in ctx.names.agents:
            doc.report(
                ctx.sink,
                ("agents", index),
                Code.INVALID_REFERENCE,
                f"no agent {show(agent)} in this tree: name a directory under agents/ "
                f"({', '.join(sorted(ctx.names.agents)) or 'none declared'})",
            )
            ok = False
    return ok


def _check_name(doc: Document, raw: dict[str, Any], ctx: BuildContext) -> bool:
    if "name" in raw and raw["name"] != doc.name:
        doc.report(
            ctx.sink,
            ("name",),
            Code.INVALID_VALUE,
            f"a scorer's name is its directory ({show(doc.name)}); remove `name`, or "
            "rename the directory",
        )
        return False
    return True


def _check_labels(doc: Document, raw: dict[str, Any], ctx: BuildContext) -> bool:
    ok = True
    seen: set[str] = set()
    for index, label in enumerate(raw["labels"]):
        if label["value"] in seen:
            doc.report(
                ctx.sink,
                ("labels", index, "value"),
                Code.DUPLICATE_VALUE,
                f"label value {show(label['value'])} is used twice; values are unique",
            )
            ok = False
        seen.add(label["value"])
    passing = raw["passingScore"]
    scores = [label["score"] for label in raw["labels"]]
    if not any(s >= passing for s in scores) or not any(s < passing for s in scores):
        doc.report(
            ctx.sink,
            ("passingScore",),
            Code.INVALID_VALUE,
            f"with passingScore {passing}, at least one label must score at or above it "
            "and one below it; adjust the scores or passingScore",
        )
        ok = False
    return ok
