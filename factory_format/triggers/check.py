"""One trigger of an automation checked against the catalogue: the provider's event, the
event's filter keys and their values, the webhook payload pattern, the inline schedule."""

from __future__ import annotations

import difflib
import json
import re
from functools import partial
from typing import Any

from filters import FilterError, filter_to_json, parse_filter

from ..builders.context import BuildContext
from ..codes import Code
from ..diagnostics import show
from ..documents import Document
from ..model import DeferredKind
from ..positions import DocPath
from .catalogue import EventSpec, event_spec, provider_spec
from .cron import CronError, parse_cron
from .matchers import Matcher, read_matcher
from .model import Schedule, Trigger

__all__ = ["check_trigger"]

_JSON_PATH_PART = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


class _TriggerCheck:
    def __init__(self, doc: Document, index: int, ctx: BuildContext) -> None:
        self.doc, self.ctx, self.sink = doc, ctx, ctx.sink
        self.base: DocPath = ("triggers", index)
        self.ok = True
        self.has_filter = False

    def report(self, path: DocPath, code: Code, message: str, *, at_key: bool = False) -> None:
        self.ok = False
        self.doc.report(self.sink, (*self.base, *path), code, message, at_key=at_key)

    def run(self, raw: dict[str, Any]) -> Trigger | None:
        spec = self.event(raw["provider"], raw["event"])
        if spec is None:
            return None
        if raw.get("schedule") is not None and not spec.schedule:
            self.report(
                ("schedule",),
                Code.INVALID_TRIGGER,
                "`schedule` belongs only to triggers with provider: schedule and "
                "event: cron_fired; remove it",
                at_key=True,
            )
        self.has_filter = "filter" in raw
        filter_raw: dict[str, Any] = raw.get("filter") or {}
        matchers = self.filter(spec, filter_raw)
        payload = self.payload(filter_raw.get("payload")) if spec.payload else None
        schedule = (
            self.schedule(raw.get("schedule"), matchers, filter_raw) if spec.schedule else None
        )
        if not self.ok:
            return None
        return Trigger(
            provider=spec.provider,
            event=spec.event,
            filter=matchers,
            payload=payload,
            schedule=schedule,
        )

    def event(self, provider: str, event: str) -> EventSpec | None:
        spec = event_spec(provider, event)
        if spec is None:
            known = provider_spec(provider)
            names = known.event_names() if known else ()
            close = difflib.get_close_matches(event, names, n=1)
            guess = f"did you mean {close[0]}? " if close else ""
            self.report(
                ("event",),
                Code.INVALID_TRIGGER,
                f"{provider} has no event {show(event)}; {guess}its events: {', '.join(names)}",
            )
        return spec

    def filter(self, spec: EventSpec, raw: dict[str, Any]) -> dict[str, Matcher]:
        found: dict[str, Matcher] = {}
        for written, value in raw.items():
            if written == "payload" and spec.payload:
                continue
            alias = spec.alias(written)
            key = spec.key(alias.canonical if alias else written)
            if key is None:
                self.unknown_key(spec, written)
                continue
            if alias is not None and alias.canonical in raw:
                self.report(
                    ("filter", written),
                    Code.INVALID_FILTER,
                    f"`{written}` is another spelling of `{alias.canonical}`; declare "
                    "one of the two",
                    at_key=True,
                )
                continue
            at: DocPath = ("filter", written)
            explain = self.explain_webhook_id if key.name == "webhook_ids" else _no_explanation
            matcher = read_matcher(value, key, alias, partial(self.report_in, at), explain)
            if matcher is not None:
                found[key.name] = matcher
                self.defer_values(spec, key.name, at, matcher)
        self.required_keys(spec, found, raw)
        return dict(sorted(found.items()))

    def report_in(self, at: DocPath, path: DocPath, message: str) -> None:
        self.report((*at, *path), Code.INVALID_FILTER, message)

    def defer_values(self, spec: EventSpec, key: str, at: DocPath, matcher: Matcher) -> None:
        """Webhook UIDs, schedule ids and the names Linear/Slack aliases take: only the
        server knows whether they exist."""
        kind: DeferredKind | None = (
            "webhook"
            if key == "webhook_ids"
            else "schedule"
            if key == "schedule_ids"
            else "provider_name"
            if matcher.by_name
            else None
        )
        if kind is None:
            return
        raw = self.doc.get((*self.base, *at))
        for path, value in _located_values(raw):
            self.ctx.defer(
                kind,
                str(value),
                self.doc,
                (*self.base, *at, *path),
                detail=f"{spec.provider} {key}",
            )

    def unknown_key(self, spec: EventSpec, written: str) -> None:
        names = [*spec.key_names(), *(a.name for a in spec.aliases)]
        close = difflib.get_close_matches(written, names, n=1)
        guess = f"did you mean `{close[0]}`? " if close else ""
        self.report(
            ("filter", written),
            Code.INVALID_FILTER,
            f"{spec.provider}/{spec.event} has no filter key `{written}`; {guess}"
            f"its keys: {', '.join(names) or 'none'}",
            at_key=True,
        )

    def required_keys(
        self, spec: EventSpec, found: dict[str, Matcher], raw: dict[str, Any]
    ) -> None:
        for key in spec.keys:
            if key.required and key.name not in found and not _written(raw, key.name):
                at: DocPath = ("filter", key.name) if key.name in raw else ("filter",)
                self.report(
                    at if self.has_filter else (),
                    Code.INVALID_FILTER,
                    f"{spec.provider}/{spec.event} needs `filter.{key.name}` with at least one "
                    f"value: {key.pattern_hint or 'a list'}",
                    at_key=True,
                )

    def explain_webhook_id(self, value: str) -> str:
        if value in self.ctx.names.webhooks:
            return (
                f"{show(value)} is the file name of webhooks/{value}.yaml; webhook_ids takes "
                "the UID the webhook is given when that file first applies (wh_...)"
            )
        return (
            f"{show(value)} is not a webhook UID: webhook_ids takes the UIDs (wh_...) webhooks "
            "are given when their file first applies, not file names"
        )

    def payload(self, raw: Any) -> dict[str, Any] | None:
        try:
            tree = parse_filter(raw)
        except FilterError as exc:
            self.report(
                ("filter", "payload", *_json_path(exc.path)),
                Code.INVALID_FILTER,
                f"payload pattern: {exc.message}",
            )
            return None
        return filter_to_json(tree) if tree is not None and tree.fields else None

    def schedule(
        self,
        raw: dict[str, Any] | None,
        matchers: dict[str, Matcher],
        filter_raw: dict[str, Any],
    ) -> Schedule | None:
        if raw is not None and "schedule_ids" in matchers:
            self.report(
                ("schedule",),
                Code.INVALID_TRIGGER,
                "declare an inline `schedule` or `filter.schedule_ids`, not both",
                at_key=True,
            )
        if raw is None:
            if "schedule_ids" not in matchers and not _written(filter_raw, "schedule_ids"):
                self.report(
                    (),
                    Code.INVALID_TRIGGER,
                    "schedule/cron_fired needs an inline `schedule: {cron: ...}` or a "
                    "non-empty `filter.schedule_ids`",
                )
            return None
        try:
            cron = parse_cron(raw["cron"])
        except CronError as exc:
            self.report(("schedule", "cron"), Code.INVALID_SCHEDULE, str(exc))
            return None
        return Schedule(cron=cron.expression, name=raw.get("name"))


def check_trigger(doc: Document, index: int, ctx: BuildContext) -> Trigger | None:
    """The canonical trigger, or None once its problems are reported (a trigger the schema
    already faulted is skipped: its problems are reported)."""
    path: DocPath = ("triggers", index)
    raw = doc.get(path)
    if not isinstance(raw, dict):
        return None
    return _TriggerCheck(doc, index, ctx).run(raw)


def _no_explanation(_value: str) -> str | None:
    return None


def _located_values(raw: Any) -> list[tuple[DocPath, Any]]:
    """The values of a matcher as written, each with its path under the matcher."""
    if isinstance(raw, list):
        return [((i,), v) for i, v in enumerate(raw)]
    if isinstance(raw, dict):
        return [((op, i), v) for op in ("in", "not_in") for i, v in enumerate(raw.get(op) or [])]
    return []


def _written(raw: dict[str, Any], key: str) -> bool:
    """The filter holds a non-empty value for `key` (valid or not: its problems are
    reported where it is written)."""
    value = raw.get(key)
    if isinstance(value, dict):
        return any(value.get(op) for op in ("in", "not_in"))
    return bool(value)


def _json_path(path: str) -> DocPath:
    """`$.a["b c"][2]` (a FilterError path) -> ("a", "b c", 2)."""
    parts: list[str | int] = []
    for match in _JSON_PATH_PART.finditer(path, 1):
        name, index, quoted = match.groups()
        parts.append(name if name else int(index) if index else json.loads(quoted))
    return tuple(parts)
