"""HTML of the console: every dynamic value goes through `escape` (or `attr`), here only."""

from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import orjson

from gateway.console.session import PATH


def escape(value: Any) -> str:
    if isinstance(value, datetime):
        value = value.isoformat(timespec="seconds")
    return html.escape("" if value is None else str(value), quote=True)


def link(href: str, text: Any, **attrs: str) -> str:
    extra = "".join(f' {name}="{escape(value)}"' for name, value in attrs.items())
    return f'<a href="{escape(href)}"{extra}>{escape(text)}</a>'


def table(headings: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """`rows` hold cells already rendered (escape their text with `escape`)."""
    return table_around(headings, rows_html(rows))


def table_around(headings: Iterable[str], body: str, body_attrs: str = "") -> str:
    """A table whose rows are rendered already; `body_attrs`: the tbody's, rendered too."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headings)
    return f"<table><thead><tr>{head}</tr></thead><tbody{body_attrs}>{body}</tbody></table>"


def rows_html(rows: Iterable[Iterable[str]]) -> str:
    return "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)


def pretty_json(value: Any) -> str:
    return f"<pre>{escape(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())}</pre>"


def csrf_field(token: str) -> str:
    return f'<input type="hidden" name="csrf" value="{escape(token)}">'


def page(title: str, body: str, *, signed_in: bool = True, csrf: str = "") -> str:
    logout = (
        f'<form method="post" action="{PATH}/logout" class="logout">{csrf_field(csrf)}'
        '<button type="submit">Log out</button></form>'
        if signed_in
        else ""
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · Delivery console</title>"
        f'<link rel="stylesheet" href="{PATH}/static/console.css">'
        f'<script defer src="{PATH}/static/console.js"></script></head><body>'
        f'<header><a href="{PATH}" class="brand">Delivery console</a>{logout}</header>'
        f"<main><h1>{escape(title)}</h1>{body}</main></body></html>"
    )
