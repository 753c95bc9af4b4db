"""A connection's reply settings: its credentials (encrypted at rest with the secret box, like
team secrets), the API root and its own templates. Changed by POST and PATCH, checked whole
after every change, read by the reply sender; the values never reach an answer or a log."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, Struct
from sqlalchemy import Row

from gateway.kernel.errors import InvalidRequest
from gateway.kernel.security import SecretBox
from gateway.webhook_gateway.connections.models import ReplyCredentialsIn
from gateway.webhook_gateway.replies import templates
from gateway.webhook_gateway.replies.credentials import FIELDS, Credentials, check_fields
from gateway.webhook_gateway.replies.github_app import load_private_key


class ReplySettings(Struct, frozen=True, kw_only=True):
    credentials: Credentials = Credentials()
    api_base_url: str | None = None
    templates: dict[str, str] | None = None


def stored(row: Row[Any], box: SecretBox) -> ReplySettings:
    encrypted = row.credentials_encrypted
    return ReplySettings(
        credentials=Credentials()
        if encrypted is None
        else Credentials.decode(box.decrypt(encrypted)),
        api_base_url=row.api_base_url,
        templates=row.reply_templates or None,
    )


def credential_names(row: Row[Any], box: SecretBox) -> list[str]:
    """The names of the credential fields a row holds, for answers (never the values)."""
    if row.credentials_encrypted is None:
        return []
    return Credentials.decode(box.decrypt(row.credentials_encrypted)).names()


def applied(provider: str, current: ReplySettings, given: ReplyCredentialsIn) -> ReplySettings:
    """`current` with what `given` names: a value replaces, null removes; 400 naming the field
    when the result is incomplete or not the provider's."""
    values = {name: getattr(current.credentials, name) for name in FIELDS}
    values |= {name: getattr(given, name) for name in FIELDS if getattr(given, name) is not UNSET}
    credentials = Credentials(**values)
    api_base_url = current.api_base_url
    if given.api_base_url is not UNSET:
        api_base_url = None if given.api_base_url is None else given.api_base_url.rstrip("/")
    chosen = current.templates
    if given.reply_templates is not UNSET:
        chosen = None if given.reply_templates is None else given.reply_templates.sources() or None
    settings = ReplySettings(credentials=credentials, api_base_url=api_base_url, templates=chosen)
    _check(provider, settings)
    return settings


def _check(provider: str, settings: ReplySettings) -> None:
    credentials = settings.credentials
    try:
        check_fields(provider, credentials.names(), settings.api_base_url)
        if credentials.private_key is not None:
            _check_private_key(credentials.private_key)
        templates.check(provider, settings.templates or {})
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from exc


def _check_private_key(pem: str) -> None:
    try:
        load_private_key(pem)
    except ValueError as exc:
        raise ValueError(f"private_key: {exc}") from exc


def columns(settings: ReplySettings, box: SecretBox) -> dict[str, object]:
    """The row's values for `settings`: credentials encrypted, NULL for what is not set."""
    credentials = settings.credentials
    return {
        "credentials_encrypted": box.encrypt(credentials.encode()) if credentials.names() else None,
        "api_base_url": settings.api_base_url,
        "reply_templates": settings.templates,
    }
