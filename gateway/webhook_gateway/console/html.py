"""HTML of the console: the Jinja2 templates in gateway/webhook_gateway/console/templates/, with
autoescape on. Every value a template prints is HTML-escaped; markup comes from the templates alone
(no template marks a value safe), so a payload, a header or a name cannot inject any."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from jinja2 import ChoiceLoader, Environment, PackageLoader, StrictUndefined
from msgspec import UNSET

from gateway.foundation.events.catalogue import expand
from gateway.webhook_gateway.console.session import PATH
from gateway.webhook_gateway.deliveries.models import MAX_WINDOW

LIVE_EVERY_S = 3  # how often console.js refreshes a live part of a page without the stream
STREAM_URL = PATH + "/events/stream"  # the console's event stream (Server-Sent Events)
# the events that change a live part of a page: the stream sends these, console.js listens to them
LIVE_TYPES = expand(["run.*", "delivery.*"])
STREAM_TYPES = ",".join(LIVE_TYPES)


def _moment(value: datetime) -> str:
    return value.isoformat(timespec="seconds")


def _pretty_json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def _duration(seconds: float | None) -> str:
    """`1 h 2 min`, `3 min 4 s`, `5 s`."""
    if seconds is None:
        return ""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def _finalize(value: Any) -> Any:
    return "" if value is None else value


def environment(*packages: str) -> Environment:
    """The templates of `packages` (each its `templates` folder; the first that has a name
    wins), with the console's globals and filters: other packages' pages extend base.html."""
    templates = Environment(
        loader=ChoiceLoader([PackageLoader(package, "templates") for package in packages]),
        autoescape=True,
        undefined=StrictUndefined,  # a name a template gets wrong fails, not renders as ""
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # shipped with the package: read once
    )
    templates.globals.update(
        console=PATH,
        max_window=MAX_WINDOW,
        live_every_s=LIVE_EVERY_S,
        stream_url=STREAM_URL,
        stream_types=STREAM_TYPES,
    )
    templates.filters.update(moment=_moment, pretty_json=_pretty_json, duration=_duration)
    templates.tests["unset"] = lambda value: value is UNSET
    return templates


_templates = environment("gateway.webhook_gateway.console")


def render(template: str, **context: Any) -> str:
    """A fragment (a template that extends nothing), e.g. a table's rows."""
    return _templates.get_template(template).render(context)


def page(
    template: str, title: str, *, signed_in: bool = True, csrf: str = "", **context: Any
) -> str:
    """A whole page: `template` extends base.html, which puts `title` in the head and as the
    heading, and the log-out form (carrying `csrf`) in the header when `signed_in`."""
    return render(template, title=title, signed_in=signed_in, csrf=csrf, **context)
