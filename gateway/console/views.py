"""The console's page bodies, from the Structs the domain's delivery functions return."""

from __future__ import annotations

import secrets

from msgspec import UNSET

from gateway.console.html import (
    csrf_field,
    escape,
    link,
    pretty_json,
    rows_html,
    table,
    table_around,
)
from gateway.deliveries.models import Delivery, FilterTestResult

LIVE_EVERY_S = 3
DELIVERY_HEADINGS = ("Received", "Delivery", "Label", "Evaluation", "Outcome", "Runs", "Note")


def _outcome(item: Delivery) -> str:
    return escape(item.trace.outcome) if item.trace else ""


def _note(item: Delivery) -> str:
    parts = []
    if item.replay_of:
        parts.append(f"replay of {escape(item.replay_of)}")
    if item.duplicate_of:
        parts.append(f"duplicate of {escape(item.duplicate_of)}")
    if item.reason:
        parts.append(f"reason: {escape(item.reason)}")
    return "; ".join(parts)


def delivery_rows(base: str, items: list[Delivery]) -> str:
    rows = [
        (
            escape(item.received_at),
            link(f"{base}/d/{item.delivery_id}", item.delivery_id, **{"class": "delivery"}),
            f'<span class="label">{escape(item.label)}</span>',
            escape(item.evaluation or ""),
            _outcome(item),
            escape(len(item.runs)),
            _note(item),
        )
        for item in items
    ]
    return (
        rows_html(rows) or f'<tr><td colspan="{len(DELIVERY_HEADINGS)}">No delivery yet.</td></tr>'
    )


def webhook_view(base: str, items: list[Delivery], csrf: str) -> str:
    live = f' id="deliveries" data-live="{escape(base)}/rows" data-every="{LIVE_EVERY_S}"'
    deliveries = table_around(DELIVERY_HEADINGS, delivery_rows(base, items), live)
    backtest = (
        f'<h2>Filter backtest</h2><form method="post" action="{escape(base)}/filter-test" '
        f'class="backtest">{csrf_field(csrf)}'
        '<label>Payload filter (JSON)<textarea name="filter" rows="4" cols="60">'
        '{"action": ["opened"]}</textarea></label>'
        '<label>Last <input type="number" name="last" value="50" min="1" max="500"> '
        "deliveries</label> <button type=submit>Test</button></form>"
    )
    refresh = f'<p class="muted">{link(base, "Refresh")} (updates itself with JavaScript)</p>'
    return f"{refresh}{deliveries}{backtest}"


def _trace(item: Delivery) -> str:
    trace = item.trace
    if not trace:
        waiting = "Not evaluated yet." if item.evaluation == "pending" else "No trace."
        return f"<p>{waiting}</p>"
    rows = []
    for entry in trace.automations:
        why = "matched" if entry.matched else escape(entry.mismatch or "")
        if entry.filter_changed is True:
            why += " <em>(filter changed since; explained against today's filter)</em>"
        rows.append((escape(entry.automation_uid), why))
    outcome = f'<p>Outcome: <strong class="outcome">{escape(trace.outcome)}</strong></p>'
    return outcome + table(("Automation", "Matched, or the first condition that failed"), rows)


def delivery_view(base: str, item: Delivery, csrf: str) -> str:
    facts: list[tuple[str, object]] = [
        ("Label", item.label),
        ("Received", item.received_at),
        ("Size", f"{item.size} bytes"),
        ("Evaluation", item.evaluation or "n/a"),
    ]
    for name, value in (("Replay of", item.replay_of), ("Duplicate of", item.duplicate_of)):
        if value:
            facts.append((name, value))
    if item.reason:
        facts.append(("Reason", item.reason))
    dl = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    parts = [f"<p>{link(base, 'All deliveries')}</p><dl>{dl}</dl>"]
    if item.payload is not UNSET:
        nonce = secrets.token_urlsafe(16)  # keys this form's replay (pages.replay)
        replay = (
            f'<form method="post" action="{escape(base)}/d/{escape(item.delivery_id)}/replay" '
            f'class="replay" data-confirm="Replay this delivery as a new one?">'
            f'{csrf_field(csrf)}<input type="hidden" name="nonce" value="{nonce}">'
            '<button type="submit">Replay</button></form>'
        )
        parts.append(replay)
    parts.append("<h2>Trace</h2>" + _trace(item))
    runs = [(escape(r.automation_uid), escape(r.run_id)) for r in item.runs]
    parts.append("<h2>Runs</h2>" + (table(("Automation", "Run"), runs) if runs else "<p>None.</p>"))
    replays = item.replays or []
    if replays:
        links = "".join(f"<li>{link(f'{base}/d/{r}', r)}</li>" for r in replays)
        parts.append(f"<h2>Replays</h2><ul>{links}</ul>")
    if item.headers:
        parts.append("<h2>Headers</h2>" + pretty_json(item.headers))
    if item.payload is not UNSET:
        parts.append("<h2>Payload</h2>" + pretty_json(item.payload))
    return "".join(parts)


def backtest_view(
    base: str, raw_filter: str, last: int, result: FilterTestResult, csrf: str
) -> str:
    rows = [
        (
            link(f"{base}/d/{d.delivery_id}", d.delivery_id),
            "matched" if d.matched else escape(d.mismatch or ""),
        )
        for d in result.deliveries
    ]
    summary = (
        f'<p class="summary">{escape(result.matched)} of {escape(result.tested)} '
        f"deliveries match <code>{escape(raw_filter)}</code> (newest {escape(last)}).</p>"
    )
    again = (
        f'<form method="post" action="{escape(base)}/filter-test" class="backtest">'
        f'{csrf_field(csrf)}<textarea name="filter" rows="4" cols="60">{escape(raw_filter)}'
        f'</textarea><input type="number" name="last" value="{escape(last)}" min="1" max="500">'
        " <button type=submit>Test again</button></form>"
    )
    results = table(("Delivery", "Matched, or the first condition that failed"), rows)
    return f"<p>{link(base, 'All deliveries')}</p>{summary}{results}{again}"
