"""The checkout credential of a claimed run (docs/runners.md#a-working-copy): a run a GitHub or
GitLab connection with credentials started is cloned with that connection's credential, made
for the repository the run works on: the one its event names, else the first of its factory's
on the connection's forge. What is needed is read in the claim's transaction (`wanted`); the
token is made after it (`hand_over`), since a GitHub App's is an HTTP exchange that no
transaction should wait for. Values go to the runner holding the claim alone."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.kernel.security import SecretBox
from gateway.platform.runners.models import CheckoutCredential, ClaimedRun
from gateway.webhook_gateway.connections.checkout_credentials import CLONING, usable
from gateway.webhook_gateway.connections.reply_settings import ReplySettings, stored

log = logging.getLogger("gateway.runners")
# (provider, settings, owner, name) -> (token, expiry) or a failure (connections.
# checkout_credentials.CheckoutCredentials.token)
Mint = Callable[[str, ReplySettings, str, str], Awaitable[Any]]


@dataclass(frozen=True)
class Wanted:
    run: ClaimedRun
    connection_uid: str
    provider: str
    owner: str
    name: str
    settings: ReplySettings


async def wanted(
    conn: AsyncConnection, team_uid: str, runs: Sequence[ClaimedRun], box: SecretBox
) -> list[Wanted]:
    """The claimed runs a live GitHub or GitLab connection of the team with credentials that
    can clone started, with the repository each works on (those without one left out)."""
    started = {
        run.run_id: (run, meta["connection_uid"])
        for run in runs
        if isinstance(meta := run.metadata or {}, dict) and meta.get("connection_uid")
    }
    if not started:
        return []
    c, d = t.provider_connections, t.deliveries
    query = select(c).where(
        c.c.uid.in_({uid for _, uid in started.values()}),
        c.c.team_uid == team_uid,
        c.c.deleted_at.is_(None),
        c.c.enabled.is_(True),
        c.c.provider.in_(sorted(CLONING)),
        c.c.credentials_encrypted.is_not(None),
    )
    connections = {row.uid: row for row in await conn.execute(query)}
    deliveries = {
        (run.metadata or {}).get("delivery_id")
        for run, uid in started.values()
        if uid in connections
    }
    payloads: dict[str, Any] = {}
    if deliveries - {None}:
        query = select(d.c.delivery_id, d.c.payload).where(d.c.delivery_id.in_(deliveries - {None}))
        for row in await conn.execute(query):
            payloads[row.delivery_id] = _json(row.payload)
    found = []
    for run, uid in started.values():
        connection = connections.get(uid)
        if connection is None:
            continue
        try:
            settings = stored(connection, box)
        except ValueError:  # a secret key that is not the one it was stored with
            continue
        provider = str(connection.provider)
        if not usable(provider, settings):
            continue
        payload = payloads.get((run.metadata or {}).get("delivery_id") or "")
        named = event_repository(provider, payload) or _factorys(run, provider)
        if named is not None:
            found.append(Wanted(run, uid, provider, named[0], named[1], settings))
    return found


async def hand_over(wants: list[Wanted], mint: Mint | None) -> None:
    """Each wanted run's `checkout_credential`; one that cannot be made is logged (never its
    value) and the run is cloned as without it."""
    if mint is None:
        return
    for want in wants:
        got = await mint(want.provider, want.settings, want.owner, want.name)
        if not isinstance(got, tuple):
            log.warning("run %s: no checkout credential from connection %s: %s",
                        want.run.run_id, want.connection_uid, got.error)  # fmt: skip
            continue
        token, expires_at = got
        want.run.checkout_credential = CheckoutCredential(
            provider="gitlab" if want.provider == "gitlab" else "github",
            repository=f"{want.owner}/{want.name}",
            token=token,
            expires_at=expires_at if isinstance(expires_at, datetime) else None,
            connection_uid=want.connection_uid,
        )


def event_repository(provider: str, payload: Any) -> tuple[str, str] | None:
    """(owner, name) of the repository a GitHub or GitLab event names (GitLab's owner is the
    project's namespace, which may hold `/`), as gateway runner --checkout reads it."""
    if not isinstance(payload, dict):
        return None
    if provider == "gitlab":
        project = payload.get("project")
        path = project.get("path_with_namespace") if isinstance(project, dict) else None
        if isinstance(path, str) and "/" in path:
            namespace, project_name = path.rsplit("/", 1)
            return namespace, project_name
        return None
    repository = payload.get("repository")
    if not isinstance(repository, dict):
        return None
    owner: Any = repository.get("owner")
    if not isinstance(owner, dict):
        owner = {}
    login, name = owner.get("login") or owner.get("name"), repository.get("name")
    if isinstance(login, str) and isinstance(name, str) and login and name:
        return login, name
    full = repository.get("full_name")
    if isinstance(full, str) and full.count("/") == 1:
        first, second = full.split("/")
        return first, second
    return None


def _factorys(run: ClaimedRun, provider: str) -> tuple[str, str] | None:
    """The first of the factory's repositories, when the factory's forge is the connection's."""
    config = run.agent_config
    repositories = [] if config is None else config.repositories
    for repository in repositories if isinstance(repositories, list) else []:
        if repository.provider == provider:
            return repository.owner, repository.name
    return None


def _json(payload: bytes | None) -> Any:
    if payload is None:
        return None
    try:
        return msgspec.json.decode(bytes(payload))
    except msgspec.DecodeError:
        return None
