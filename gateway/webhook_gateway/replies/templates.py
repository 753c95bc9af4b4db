"""Reply texts: Jinja2 templates in a sandbox, one pair (started, ended) of documented defaults
for every provider, overridable per connection (`reply_templates`). Values are escaped for the
provider's dialect (markup.py); `link(url, text)` and `bold(text)` write that dialect's markup.

The sandbox keeps a template from Python's internals; a template's output is cut at the
provider's limit, `range` is short and `*`/`**` cannot build huge values, so a template costs
little to render. Templates are checked when they are written (`check`): one that does not
compile, or fails on the sample contexts, is refused there, not when a run ends."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment
from markupsafe import Markup

from gateway.webhook_gateway.replies.context import PHASES, Phase, ReplyContext, sample
from gateway.webhook_gateway.replies.markup import Dialect, Raw, bold, escape, link

log = logging.getLogger("gateway.replies")

DIALECTS: dict[str, Dialect] = {
    "github": "markdown",
    "gitlab": "markdown",
    "linear": "markdown",
    "jira": "markdown",
    "slack": "mrkdwn",
}
# the longest text each provider takes in one message (GitHub 65,536 characters; GitLab notes
# 1,000,000; Slack cuts `text` at 40,000; Jira's comment 32,767), less room for the mark below
LIMITS = {"github": 65_000, "gitlab": 999_000, "linear": 100_000, "jira": 32_000, "slack": 39_000}
CUT = "\n\n…"
MAX_TEMPLATE = 10_000
MAX_RANGE = 100
# what a template can raise while it renders (SecurityError and UndefinedError are
# TemplateErrors; a macro calling itself ends in RecursionError)
RENDER_ERRORS = (TemplateError, TypeError, ValueError, ArithmeticError, LookupError, RecursionError)

DEFAULTS: dict[Phase, str] = {
    "started": """\
{{ run.icon }} {{ bold(agent.name) }} {{ run.outcome }}\
{% if automation %} ({{ automation.name }}){% endif %}\
{% if event.actor %}, for {{ event.actor }}{% endif %}.

{{ link(run.url, run.title) }}
""",
    "ended": """\
{{ run.icon }} {{ bold(agent.name) }} {{ run.outcome }}\
{% if run.duration %} after {{ run.duration }}{% endif %}: {{ link(run.url, run.title) }}
{% if run.status_message %}

{{ run.status_message }}
{% endif %}
{% if artifacts %}

{% for artifact in artifacts %}
- {{ link(artifact.url, artifact.title) }}
{% endfor %}
{% endif %}
""",
}


class ReplyTemplates:
    """The templates of one connection: its overrides, else the defaults."""

    def __init__(self, provider: str, overrides: Mapping[str, str] | None, owner: str) -> None:
        self._provider, self._dialect, self._owner = provider, DIALECTS[provider], owner
        self._overrides = dict(overrides or {})

    def render(self, context: ReplyContext) -> str:
        """The text of `context.phase`. An override that fails on this context (a path the
        samples did not take) is logged, and the default is used: the reply is not lost."""
        source = self._overrides.get(context.phase)
        if source is not None:
            try:
                return self._render(source, context)
            except RENDER_ERRORS as exc:
                log.warning(
                    "reply template %r of %s failed (%s: %s); the default template is used",
                    context.phase, self._owner, type(exc).__name__, exc,
                )  # fmt: skip
        return self._render(DEFAULTS[context.phase], context)

    def _render(self, source: str, context: ReplyContext) -> str:
        template = _compiled(self._dialect, source)
        limit = LIMITS[self._provider]
        parts: list[str] = []
        size = 0
        for part in template.generate(context.variables()):
            parts.append(part)
            size += len(part)
            if size > limit:
                break
        return _tidy("".join(parts), limit)


def check(provider: str, overrides: Mapping[str, str]) -> None:
    """ValueError naming `reply_templates.<phase>` when a template does not compile, or fails
    on the sample contexts (a misspelt variable, a filter that does not exist)."""
    for phase, source in overrides.items():
        if phase not in PHASES:
            raise ValueError(f"reply_templates.{phase}: no such template (started, ended)")
        try:
            template = _compiled(DIALECTS[provider], source)
            for full in (True, False):
                "".join(template.generate(sample(phase, full=full).variables()))
        except RENDER_ERRORS as exc:
            raise ValueError(f"reply_templates.{phase}: {_problem(exc)}") from exc


def _problem(exc: Exception) -> str:
    line = getattr(exc, "lineno", None)
    message = getattr(exc, "message", None) or str(exc)
    return f"line {line}: {message}" if line else f"{type(exc).__name__}: {message}"


def _tidy(text: str, limit: int) -> str:
    """No runs of blank lines (what template tags leave behind), no space at either end, and
    no more than `limit` characters."""
    text = re.sub(r"\n[ \t]*(\n[ \t]*)+\n", "\n\n", text).strip()
    return text if len(text) <= limit else text[: limit - len(CUT)] + CUT


@functools.lru_cache(maxsize=256)
def _compiled(dialect: Dialect, source: str) -> Template:
    return _environment(dialect).from_string(source)


@functools.cache
def _environment(dialect: Dialect) -> SandboxedEnvironment:
    environment = _Sandbox(
        undefined=StrictUndefined,
        finalize=functools.partial(_finalize, dialect=dialect),
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # escaping is `_finalize`'s, for the dialect
    )
    environment.globals.update(
        link=functools.partial(link, dialect=dialect),
        bold=functools.partial(bold, dialect=dialect),
        range=_short_range,
    )
    return environment


def _finalize(value: Any, dialect: Dialect) -> str:
    """Every `{{ ... }}` passes here: helpers' output and `|safe` as they are, else escaped."""
    if isinstance(value, Raw | Markup):
        return str(value)
    return escape(value, dialect)


def _short_range(*args: int) -> range:
    numbers = range(*args)
    if len(numbers) > MAX_RANGE:
        raise SecurityError(f"range: at most {MAX_RANGE} numbers in a reply template")
    return numbers


class _Sandbox(SandboxedEnvironment):
    """Jinja's sandbox, with `*` and `**` refused where they would build a huge value."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int | float) and abs(right) > MAX_RANGE:
            raise SecurityError(f"**: exponents above {MAX_RANGE} are not allowed")
        if operator == "*" and _repeats(left, right) > MAX_TEMPLATE * 10:
            raise SecurityError("*: the value would be too large")
        return super().call_binop(context, operator, left, right)


def _repeats(left: Any, right: Any) -> int:
    """How long `left * right` would be when it repeats a sequence, else 0."""
    for sequence, times in ((left, right), (right, left)):
        if isinstance(sequence, str | list | tuple) and isinstance(times, int):
            return len(sequence) * times
    return 0
