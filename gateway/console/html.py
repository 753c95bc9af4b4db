"""HTML of the console: the Jinja2 templates in gateway/console/templates/, with autoescape on.
Every value a template prints is HTML-escaped; markup comes from the templates alone (no
template marks a value safe), so a payload, a header or a name cannot inject any."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from jinja2 import Environment, PackageLoader, StrictUndefined
from msgspec import UNSET

from gateway.console.session import PATH
from gateway.deliveries.models import MAX_WINDOW

LIVE_EVERY_S = 3  # how often console.js refreshes a webhook's deliveries


def _moment(value: datetime) -> str:
    return value.isoformat(timespec="seconds")


def _pretty_json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def _finalize(value: Any) -> Any:
    return "" if value is None else value


_templates = Environment(
    loader=PackageLoader("gateway.console", "templates"),
    autoescape=True,
    undefined=StrictUndefined,  # a name a template gets wrong fails, not renders as ""
    finalize=_finalize,
    trim_blocks=True,
    lstrip_blocks=True,
    auto_reload=False,  # shipped with the package: read once
)
_templates.globals.update(console=PATH, max_window=MAX_WINDOW, live_every_s=LIVE_EVERY_S)
_templates.filters.update(moment=_moment, pretty_json=_pretty_json)
_templates.tests["unset"] = lambda value: value is UNSET


def render(template: str, **context: Any) -> str:
    """A fragment (a template that extends nothing), e.g. a table's rows."""
    return _templates.get_template(template).render(context)


def page(
    template: str, title: str, *, signed_in: bool = True, csrf: str = "", **context: Any
) -> str:
    """A whole page: `template` extends base.html, which puts `title` in the head and as the
    heading, and the log-out form (carrying `csrf`) in the header when `signed_in`."""
    return render(template, title=title, signed_in=signed_in, csrf=csrf, **context)
