"""API keys to principals (identities.authenticate, one statement): a user with every team they
are in, an agent with its team, nobody for an unknown key or one whose owner is gone."""

from __future__ import annotations

import secrets

from sqlalchemy import delete

from gateway.foundation.accounts import identities
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from tests.support import GatewayClient


def test_keys_name_their_owner_and_every_team(client: GatewayClient) -> None:
    async def check(services: Services) -> None:
        async with services.database.transaction() as conn:
            first = await identities.create_team(conn, "First")
            second = await identities.create_team(conn, "Second")
            email = f"member{secrets.token_hex(4)}@example.com"
            user, first_key = await identities.create_user(conn, first, email)
            _, second_key = await identities.create_user(conn, second, email)
            agent, agent_key = await identities.create_agent(conn, second, "Helper")
            gone, gone_key = await identities.create_agent(conn, first, "Gone")
            await conn.execute(delete(t.agents).where(t.agents.c.uid == gone))

        async with services.database.read() as conn:
            both = frozenset({first, second})
            display = email.split("@", 1)[0]
            for key in (first_key, second_key):
                member = Principal("user", user, display, email, both)
                assert await identities.authenticate(conn, key) == member
            helper = Principal("agent", agent, "Helper", None, frozenset({second}))
            assert await identities.authenticate(conn, agent_key) == helper
            assert await identities.authenticate(conn, gone_key) is None
            assert await identities.authenticate(conn, "gw_unknown") is None

    client.run(check)


def test_a_user_in_no_team_is_still_themselves(client: GatewayClient) -> None:
    async def check(services: Services) -> None:
        async with services.database.transaction() as conn:
            team = await identities.create_team(conn, "Left")
            email = f"leaver{secrets.token_hex(4)}@example.com"
            user, key = await identities.create_user(conn, team, email)
            await conn.execute(delete(t.team_members).where(t.team_members.c.user_uid == user))
        async with services.database.read() as conn:
            principal = await identities.authenticate(conn, key)
        assert principal is not None
        assert (principal.kind, principal.uid, principal.team_uids) == ("user", user, frozenset())

    client.run(check)
