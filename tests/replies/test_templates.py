"""Reply texts: the defaults per dialect, values escaped so that nothing in them formats,
links or mentions, overrides checked when written, and the sandbox's limits."""

from __future__ import annotations

import logging
import re
from datetime import timedelta

import pytest
from msgspec import structs

from gateway.webhook_gateway.replies import Artifact, ReplyTemplates
from gateway.webhook_gateway.replies.adf import document
from gateway.webhook_gateway.replies.context import duration, sample
from gateway.webhook_gateway.replies.markup import escape, link
from gateway.webhook_gateway.replies.templates import LIMITS, check
from tests.replies.jira_api import adf_problems

HOSTILE = "@here <!channel> **bold** [x](javascript:alert(1)) <script> & 1. `code` #1"


def test_defaults_say_who_what_and_link_the_run() -> None:
    started = ReplyTemplates("github", None, "pcn_x").render(sample("started"))
    assert started == (
        "🤖 **Foreman** is working on it (triage), for octocat.\n\n"
        "[A sample run](https://gateway.example.com/console/runs/run_sample)"
    )
    ended = ReplyTemplates("slack", None, "pcn_x").render(sample("ended"))
    assert ended == (
        "✅ *Foreman* finished after 5m 00s: "
        "<https://gateway.example.com/console/runs/run_sample|A sample run>\n\nDone.\n\n"
        "- <https://example.com/pr/1|Fix it>\n- report.md"
    )
    bare = ReplyTemplates("gitlab", None, "pcn_x").render(sample("ended", full=False))
    assert bare.endswith(
        "finished after 5m 00s: [A sample run](https://gateway.example.com/console/runs/run_sample)"
    )


@pytest.mark.parametrize(
    ("state", "words"),
    [("FAILED", "❌ **Foreman** failed"), ("CANCELLED", "🚫 **Foreman** was cancelled"),
     ("BLOCKED", "⚠️ **Foreman** is blocked and needs a person"), ("ERROR", "stopped on an error")],
)  # fmt: skip
def test_the_end_says_how_it_ended(state: str, words: str) -> None:
    context = structs.replace(sample("ended"), state=state, status_message="It broke.")
    text = ReplyTemplates("github", None, "pcn_x").render(context)
    assert words in text and "It broke." in text


def test_pull_requests_come_first() -> None:
    artifacts = (
        Artifact(kind="file", title="notes.txt"),
        Artifact(kind="pull_request", title="Second", url="https://github.com/o/r/pull/2"),
        Artifact(kind="pull_request", url="https://github.com/o/r/pull/3"),
    )
    context = structs.replace(sample("ended"), artifacts=artifacts)
    text = ReplyTemplates("github", None, "pcn_x").render(context)
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert lines == [
        "- [Second](https://github.com/o/r/pull/2)",
        "- [https://github.com/o/r/pull/3](https://github.com/o/r/pull/3)",
        "- notes.txt",
    ]


def test_values_cannot_format_link_or_mention() -> None:
    context = structs.replace(sample("ended"), agent=HOSTILE, status_message=HOSTILE)
    markdown = ReplyTemplates("github", None, "pcn_x").render(context)
    for raw in ("@here", "<script>", "*bold*", "[x]", "`code`", "#1"):
        assert not re.search(r"(?<!\\)" + re.escape(raw), markdown), raw
    assert "\\@here" in markdown and "\\<script\\>" in markdown
    mrkdwn = ReplyTemplates("slack", None, "pcn_x").render(context)
    assert "<!channel>" not in mrkdwn and "&lt;!channel&gt;" in mrkdwn and "&amp;" in mrkdwn
    adf = document(ReplyTemplates("jira", None, "pcn_x").render(context))
    texts = [node["text"] for node in _walk(adf) if node.get("type") == "text"]
    assert HOSTILE in "".join(texts)  # Jira shows the value exactly as it was
    assert not any(mark["type"] == "link" and "javascript" in mark["attrs"]["href"]
                   for node in _walk(adf) for mark in node.get("marks", []))  # fmt: skip


def _walk(node: dict) -> list[dict]:
    found = [node]
    for child in node.get("content", []):
        found.extend(_walk(child))
    return found


def test_links_are_http_only_and_cannot_be_broken_out_of() -> None:
    assert link("javascript:alert(1)", "x", "markdown") == "x"
    assert link("https://e.x/a b)(c", "t", "markdown") == "[t](https://e.x/a%20b%29%28c)"
    assert link("https://e.x/a|b>c", "t|u", "mrkdwn") == "<https://e.x/a%7Cb%3Ec|t|u>"
    assert escape("1. first\n2) second", "markdown") == "1\\. first\n2\\) second"


def test_every_default_makes_a_valid_jira_document() -> None:
    for phase in ("started", "ended"):
        for full in (True, False):
            text = ReplyTemplates("jira", None, "pcn_x").render(sample(phase, full=full))
            assert adf_problems(document(text)) == []
    hostile = structs.replace(sample("ended"), status_message=HOSTILE, run_title=HOSTILE)
    assert adf_problems(document(ReplyTemplates("jira", None, "x").render(hostile))) == []


def test_overrides_replace_a_default_and_use_the_dialects_helpers() -> None:
    overrides = {"started": "{{ bold(agent.name) }} took {{ link(run.url, 'run ' ~ run.id) }}"}
    check("slack", overrides)
    templates = ReplyTemplates("slack", overrides, "pcn_x")
    assert templates.render(sample("started")) == (
        "*Foreman* took <https://gateway.example.com/console/runs/run_sample|run run_sample>"
    )
    assert templates.render(sample("ended")).startswith("✅ *Foreman* finished")  # the default


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("{% if %}", "reply_templates.started: line 1: Expected an expression"),
        (
            "{{ run.nope }}",
            "reply_templates.started: UndefinedError: 'dict object' has no attribute 'nope'",
        ),
        ("{{ automation.name }}", "reply_templates.started: UndefinedError"),  # none without one
        ("{{ run.__class__ }}", "reply_templates.started: SecurityError"),
        (
            "{{ 'x' * 10000000 }}",
            "reply_templates.started: SecurityError: *: the value would be too large",
        ),
        ("{% for i in range(1000) %}{% endfor %}", "reply_templates.started: SecurityError: range"),
        ("{{ 2 ** 1000000 }}", "reply_templates.started: SecurityError: **"),
        ("{{ x | nofilter }}", "reply_templates.started: line 1: No filter named 'nofilter'"),
    ],
)
def test_templates_that_cannot_work_are_refused_when_written(source: str, problem: str) -> None:
    with pytest.raises(
        ValueError, match="^" + problem.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")
    ):
        check("github", {"started": source})


def test_a_failing_override_falls_back_to_the_default(caplog: pytest.LogCaptureFixture) -> None:
    overrides = {"ended": "{% if run.state == 'FAILED' %}{{ run.typo }}{% endif %}"}
    check("github", overrides)  # the samples succeed: this branch is not taken
    context = structs.replace(sample("ended"), state="FAILED")
    with caplog.at_level(logging.WARNING, "gateway.webhook_gateway.replies"):
        text = ReplyTemplates("github", overrides, "pcn_1").render(context)
    assert text.startswith("❌ **Foreman** failed")
    assert "reply template 'ended' of pcn_1 failed" in caplog.text


def test_output_is_cut_at_the_providers_limit() -> None:
    overrides = {"ended": "{% for i in range(100) %}{{ run.status_message }}{% endfor %}"}
    context = structs.replace(sample("ended"), status_message="y" * 5000)
    text = ReplyTemplates("jira", overrides, "pcn_x").render(context)
    assert len(text) == LIMITS["jira"] and text.endswith("…")


def test_durations_read_as_people_read_them() -> None:
    start = sample("ended").started_at
    assert start is not None
    expected = {5: "5s", 252: "4m 12s", 3780: "1h 03m", 90000 + 3600 * 3: "1d 4h"}
    for seconds, text in expected.items():
        assert duration(start, start + timedelta(seconds=seconds)) == text
    assert duration(start, None) is None


def test_a_template_that_calls_itself_is_refused() -> None:
    recursive = "{% macro again() %}{{ again() }}{% endmacro %}{{ again() }}"
    with pytest.raises(ValueError, match=r"^reply_templates.ended: RecursionError"):
        check("github", {"ended": recursive})
