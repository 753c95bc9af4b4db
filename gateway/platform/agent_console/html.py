"""The agent console's templates: its own (gateway/platform/agent_console/templates/) over the
delivery console's, whose base.html and macros its pages use; the same escaping rules."""

from __future__ import annotations

from typing import Any

from gateway.webhook_gateway.console.html import environment

_templates = environment("gateway.platform.agent_console", "gateway.webhook_gateway.console")


def render(template: str, **context: Any) -> str:
    return _templates.get_template(template).render(context)


def page(template: str, title: str, *, csrf: str, **context: Any) -> str:
    return render(template, title=title, signed_in=True, csrf=csrf, **context)
