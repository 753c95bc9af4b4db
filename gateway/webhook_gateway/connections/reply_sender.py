"""The sender of replies: one message of the outbox (`ReplyMessage`) posted, or edited, through
the connection that started the run, with its credentials and templates.

`ReplySender.send` is the `reply` kind's sender of the outbound dispatcher: it never raises for
what a provider or the network did, it answers an outcome
(gateway/foundation/outbound/outcomes.py)."""

from __future__ import annotations

import logging

from msgspec import Struct
from sqlalchemy import select

from gateway.foundation.store import Database
from gateway.foundation.store import tables as t
from gateway.kernel.security import SecretBox
from gateway.webhook_gateway.connections.reply_outbox import KIND
from gateway.webhook_gateway.connections.reply_settings import ReplySettings, stored
from gateway.webhook_gateway.replies import (
    Failed,
    HttpClient,
    InstallationTokens,
    Outcome,
    ReplyContext,
    ReplyTarget,
    ReplyTemplates,
    client_for,
    post_or_edit,
)

log = logging.getLogger("gateway.replies")
# the console's page of a run, under GATEWAY_PUBLIC_URL (else GATEWAY_WEBHOOK_BASE_URL)
RUN_PAGE = "/console/runs/{run_id}"


class ReplyMessage(Struct, frozen=True, kw_only=True):
    """What one reply needs: the connection it goes through, where (the run's work item), what
    (the context its template renders) and, to edit the run's earlier message, that message."""

    connection_uid: str
    target: ReplyTarget
    context: ReplyContext
    message_id: str | None = None


def run_page(public_base_url: str, run_id: str) -> str:
    return public_base_url.rstrip("/") + RUN_PAGE.format(run_id=run_id)


class ReplySender:
    """Holds what replies share in one process: the HTTP client (the outbound package's, which
    refuses private addresses) and GitHub Apps' installation tokens."""

    kind = KIND

    def __init__(self, database: Database, box: SecretBox, http: HttpClient) -> None:
        self._database, self._box, self._http = database, box, http
        self._tokens = InstallationTokens()

    async def send(self, message: ReplyMessage) -> Outcome:
        found = await self._connection(message.connection_uid)
        if isinstance(found, Failed):
            return found
        provider, settings = found
        try:
            client = client_for(
                provider, self._http, settings.credentials, settings.api_base_url, self._tokens
            )
        except ValueError as exc:
            return Failed(error=str(exc))
        templates = ReplyTemplates(provider, settings.templates, message.connection_uid)
        text = templates.render(message.context)
        outcome = await post_or_edit(client, message.target, text, message.message_id)
        if isinstance(outcome, Failed):
            log.warning(
                "reply of run %s through %s failed: %s",
                message.context.run_id, message.connection_uid, outcome.error,
            )  # fmt: skip
        return outcome

    async def _connection(self, uid: str) -> tuple[str, ReplySettings] | Failed:
        c = t.provider_connections
        async with self._database.read() as conn:
            row = (await conn.execute(select(c).where(c.c.uid == uid))).first()
        if row is None or row.deleted_at is not None:
            return Failed(error=f"provider connection {uid} was deleted")
        if not row.enabled:
            return Failed(error=f"provider connection {uid} is disabled")
        try:
            settings = stored(row, self._box)
        except ValueError as exc:  # a secret key that is not the one it was stored with
            return Failed(error=f"credentials: {exc}")
        if not settings.credentials.names():
            return Failed(error=f"provider connection {uid} has no reply credentials")
        return row.provider, settings
