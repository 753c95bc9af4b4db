"""Seed a fresh store by direct inserts: factories, webhooks, automations, triggers (a SQLite
file, or a PostgreSQL database given by URL); and, for the provider rows of the grid, as many
GitHub provider connections of the team as webhooks, with ten factories that list acme/widgets
and ten GitHub automations each (one of the team's matches the `agent` label).

The schema comes from `gateway.foundation.store.migrate`; rows go in through
`gateway.foundation.store.tables`, so the benchmark never depends on the management API.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from factory_format import Trigger
from factory_format.triggers.matchers import Matcher
from gateway.foundation.store import migrate, tables
from gateway.foundation.store.db import create_database
from gateway.kernel.security import SecretBox, hash_token
from gateway.webhook_gateway.automations.models import encode_triggers

AuthMode = Literal["token", "signature"]
MATCH_TYPE = "bench.match"
MATCH_LABEL = "agent"  # the label of the provider deliveries one automation of the team matches
PROVIDER_REPOSITORY = "acme/widgets"
PROVIDER_FACTORIES = 10
CHUNK = 5_000


def webhook_trigger(webhook_uid: str, payload_filter: dict[str, Any]) -> dict[str, Any]:
    """One webhook trigger as the automations table holds it: the canonical form the API and
    factory apply write (`encode_triggers`), which the evaluator reads back with msgspec. (An
    older shape here was unreadable to it: every compile of the team's provider triggers logged
    an error per webhook automation, and the grid's provider rows paid for it.)"""
    matcher = {"webhook_ids": Matcher(in_=(webhook_uid,))}
    trigger = Trigger(provider="webhook", event="received", filter=matcher, payload=payload_filter)
    stored: dict[str, Any] = encode_triggers([trigger])[0]
    return stored


@dataclass(frozen=True, slots=True)
class Webhook:
    uid: str
    credential: str  # the bearer token, or the standard_webhooks secret "whsec_..."


@dataclass(frozen=True, slots=True)
class Seed:
    database: Path  # the SQLite file (for PostgreSQL: the URL, as a Path of its text)
    auth_mode: AuthMode
    webhooks: tuple[Webhook, ...]
    automations_per_webhook: int
    # GitHub connections (uid, the secret GitHub signs with), as many as webhooks
    connections: tuple[Webhook, ...] = ()


def credential_for(uid: str, auth_mode: AuthMode, salt: bytes) -> str:
    raw = hmac.digest(salt, uid.encode(), "sha256")
    if auth_mode == "token":
        return "wht_" + base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return "whsec_" + base64.b64encode(raw).decode()


def seed(
    database: Path | str,
    *,
    factories: int,
    webhooks_per_factory: int,
    automations_per_webhook: int,
    auth_mode: AuthMode,
    secret_key: bytes,
) -> Seed:
    return asyncio.run(
        _seed(
            database, factories, webhooks_per_factory, automations_per_webhook, auth_mode,
            secret_key,
        )
    )  # fmt: skip


async def _seed(
    path: Path | str,
    factories: int,
    per_factory: int,
    automations_per_webhook: int,
    auth_mode: AuthMode,
    secret_key: bytes,
) -> Seed:
    url = path if isinstance(path, str) else f"sqlite+aiosqlite:///{path}"
    db = create_database(url)
    now = datetime.now(UTC)
    salt = hashlib.sha256(b"bench:" + secret_key).digest()
    box = SecretBox(secret_key)
    rows: dict[str, list[dict[str, Any]]] = {
        "factories": [], "webhooks": [], "automations": [], "automation_triggers": [],
        "provider_connections": [],
    }  # fmt: skip
    hooks: list[Webhook] = []
    for f in range(factories):
        factory_uid = f"fac_bench{f:05d}"
        rows["factories"].append(
            {"uid": factory_uid, "team_uid": "team_bench", "name": f"bench factory {f}",
             "foreman_agent_uid": "agt_bench", "repositories": None, "created_at": now,
             "updated_at": now}
        )  # fmt: skip
        for w in range(per_factory):
            uid = f"whk_bench{f:05d}x{w:03d}"
            credential = credential_for(uid, auth_mode, salt)
            hooks.append(Webhook(uid, credential))
            rows["webhooks"].append(_webhook_row(uid, factory_uid, credential, auth_mode, box, now))
            for a in range(automations_per_webhook):
                auto_uid = f"aut_{uid[4:]}a{a:02d}"
                wanted = MATCH_TYPE if a == 0 else f"bench.other{a}"
                payload_filter = {"type": [wanted]}
                trigger = webhook_trigger(uid, payload_filter)
                rows["automations"].append(
                    {"uid": auto_uid, "factory_uid": factory_uid, "name": f"bench {uid} {a}",
                     "prompt": f"Handle {{{{payload.type}}}} for {uid}", "enabled": True,
                     "triggers": [trigger], "created_at": now, "updated_at": now}
                )  # fmt: skip
                rows["automation_triggers"].append(
                    {"automation_uid": auto_uid, "position": 0, "webhook_uid": uid,
                     "payload_filter": payload_filter}
                )  # fmt: skip
    connections = _provider_rows(rows, len(hooks), automations_per_webhook, salt, box, now)
    try:
        await migrate(db)
        async with db.transaction() as conn:
            await conn.execute(
                tables.teams.insert(), [{"uid": "team_bench", "name": "bench", "created_at": now}]
            )
            await conn.execute(
                tables.agents.insert(),
                [{"uid": "agt_bench", "team_uid": "team_bench", "name": "foreman",
                  "created_at": now}],
            )  # fmt: skip
            for name in rows:
                table = tables.metadata.tables[name]
                batch = rows[name]
                for start in range(0, len(batch), CHUNK):
                    await conn.execute(table.insert(), batch[start : start + CHUNK])
    finally:
        await db.close()
    return Seed(Path(path), auth_mode, tuple(hooks), automations_per_webhook, connections)


def _provider_rows(
    rows: dict[str, list[dict[str, Any]]],
    count: int,
    automations: int,
    salt: bytes,
    box: SecretBox,
    now: datetime,
) -> tuple[Webhook, ...]:
    """GitHub connections of the team, and GitHub automations in its first factories."""
    owner, name = PROVIDER_REPOSITORY.split("/")
    for factory in rows["factories"][:PROVIDER_FACTORIES]:
        factory["repositories"] = [{"owner": owner, "name": name}]
        for a in range(automations):
            uid = f"aut_gh{factory['uid'][4:]}a{a:02d}"
            first = factory is rows["factories"][0] and a == 0
            label = MATCH_LABEL if first else f"other-{uid}"
            trigger = {
                "provider": "github",
                "event": "issue_labeled",
                "filter": {"labels": {"in": [label]}},
            }
            rows["automations"].append(
                {"uid": uid, "factory_uid": factory["uid"], "name": f"bench {uid}",
                 "prompt": f"Handle the issue for {uid}", "enabled": True,
                 "triggers": [trigger], "created_at": now, "updated_at": now}
            )  # fmt: skip
    connections = []
    for c in range(count):
        uid = f"pcn_bench{c:06d}"
        secret = "gh_" + hmac.digest(salt, uid.encode(), "sha256").hex()
        connections.append(Webhook(uid, secret))
        rows["provider_connections"].append(
            {"uid": uid, "team_uid": "team_bench", "provider": "github", "name": uid,
             "secret_encrypted": box.encrypt(secret), "enabled": True, "config_version": 1,
             "created_at": now, "updated_at": now}
        )  # fmt: skip
    return tuple(connections)


def _webhook_row(
    uid: str, factory_uid: str, credential: str, auth_mode: AuthMode, box: SecretBox, now: datetime
) -> dict[str, Any]:
    signed = auth_mode == "signature"
    return {
        "uid": uid,
        "factory_uid": factory_uid,
        "name": uid,
        "auth_mode": auth_mode,
        "signature_scheme": "standard_webhooks" if signed else None,
        "token_hash": None if signed else hash_token(credential),
        "secret_encrypted": box.encrypt(credential) if signed else None,
        "enabled": True,
        "config_version": 1,
        "created_at": now,
        "updated_at": now,
    }
