"""factory.yaml, written: the factory's own fields, and its foreman (the tree's FOREMAN agent,
so work dispatched to the factory and its automations' runs reach it)."""

from __future__ import annotations

from datetime import datetime

from msgspec import UNSET, UnsetType
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import Factory
from gateway.foundation.accounts.factories import create_factory as create_factory_row
from gateway.foundation.store import tables as t
from gateway.kernel.types import JsonObject
from gateway.platform.factories.foreman import set_foreman
from gateway.platform.factory_files.writing import Columns
from gateway.webhook_gateway.automations.models import json_form


class FactoryColumns(Columns, kw_only=True):
    """Left out of the file (UNSET here), `credentialStrategy` and `integrations` leave the
    stored values."""

    name: str
    alias: str | None
    description: str | None
    repositories: list[JsonObject]
    secrets: list[str]
    mcp_servers: dict[str, str]
    cloud_providers: JsonObject | None
    agent_defaults: JsonObject
    code_forges: list[str] | None
    schema_version: str
    definition_applied_at: datetime
    updated_at: datetime
    credential_strategy: str | UnsetType = UNSET
    integrations: list[JsonObject] | UnsetType = UNSET


def _columns(factory: Factory, now: datetime) -> FactoryColumns:
    return FactoryColumns(
        name=factory.name,
        alias=factory.alias,
        description=factory.description,
        repositories=json_form(factory.repositories),
        secrets=list(factory.secrets),
        mcp_servers=dict(factory.mcp_servers),
        cloud_providers=json_form(factory.cloud_providers),
        agent_defaults=json_form(factory.agent_defaults),
        code_forges=json_form(factory.code_forges),
        schema_version=factory.schema_version,
        definition_applied_at=now,
        updated_at=now,
        credential_strategy=factory.credential_strategy or UNSET,
        integrations=UNSET if factory.integrations is None else json_form(factory.integrations),
    )


async def create_factory(
    conn: AsyncConnection, team_uid: str, factory: Factory, now: datetime
) -> str:
    uid = await create_factory_row(conn, team_uid, factory.name, factory.alias, None)
    await update_factory(conn, uid, factory, now)
    return uid


async def update_factory(conn: AsyncConnection, uid: str, factory: Factory, now: datetime) -> None:
    f = t.factories
    await conn.execute(update(f).where(f.c.uid == uid).values(**_columns(factory, now).values()))


async def make_foreman(conn: AsyncConnection, factory_uid: str, agent_uid: str) -> None:
    await set_foreman(conn, factory_uid, agent_uid)
