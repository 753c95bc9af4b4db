"""A team with factories that list repositories, automations with provider triggers, and the
runs deliveries start: helpers for the provider trigger tests."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from gateway.foundation.accounts import factories
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from tests.connections import signing
from tests.connections.signing import Signed
from tests.support import GatewayClient, World, eventually

BASE_URL = "https://hooks.example.test"


def set_repositories(client: GatewayClient, factory_uid: str, *repos: str) -> None:
    """What apply writes from factory.yaml's `repositories` (`owner/name` each)."""
    stored = [{"owner": r.rsplit("/", 1)[0], "name": r.rsplit("/", 1)[1]} for r in repos]

    async def run(services: Services) -> None:
        async with services.database.transaction() as conn:
            f = t.factories
            await conn.execute(update(f).where(f.c.uid == factory_uid).values(repositories=stored))

    client.run(run)


def add_factory(client: GatewayClient, world: World, name: str, *repos: str) -> str:
    """Another factory of the world's team (its foreman: the world's agent)."""

    async def run(services: Services) -> str:
        async with services.database.transaction() as conn:
            return await factories.create_factory(conn, world.team_uid, name, None, world.agent_uid)

    uid = client.run(run)
    set_repositories(client, uid, *repos)
    return uid


def automation(
    world: World, factory_uid: str, name: str, *triggers: dict[str, Any], prompt: str = ""
) -> str:
    body = {"name": name, "prompt": prompt or f"Handle it ({name}).", "triggers": list(triggers)}
    made = world.api("POST", f"/factory/{factory_uid}/automations", json=body)
    assert made.status_code == 201, made.text
    uid: str = made.json()["uid"]
    return uid


def trigger(provider: str, event: str, **filter_: Any) -> dict[str, Any]:
    return {"provider": provider, "event": event} | ({"filter": filter_} if filter_ else {})


def connect(world: World, provider: str, **body: Any) -> dict[str, Any]:
    made = world.api("POST", "/provider-connections", json={"provider": provider} | body)
    assert made.status_code == 201, made.text
    answer: dict[str, Any] = made.json()
    answer["path"] = answer["ingress_url"].removeprefix(BASE_URL)
    return answer


def deliver(client: GatewayClient, connection: dict[str, Any], signed: Signed) -> str:
    response = client.post(connection["path"], content=signed.body, headers=signed.headers)
    assert response.status_code == 202, response.text
    delivery_id: str = response.json()["delivery_id"]
    return delivery_id


def evaluated(world: World, connection: dict[str, Any], delivery_id: str) -> dict[str, Any]:
    """The delivery as the API shows it, once the evaluator has evaluated it."""
    path = f"/provider-connections/{connection['uid']}/deliveries/{delivery_id}"

    def probe() -> Any:
        found = world.api("GET", path)
        if found.status_code == 200 and found.json()["evaluation"] in ("evaluated", "failed"):
            return found.json()
        return None

    answer: dict[str, Any] = eventually(probe)
    return answer


def runs(client: GatewayClient, delivery_id: str) -> list[Any]:
    """The runs a delivery started, with the columns the tests look at."""

    async def read(services: Services) -> list[Any]:
        r = t.runs
        query = (
            select(
                *(r.c.run_id, r.c.automation_uid, r.c.factory_uid, r.c.team_uid, r.c.prompt),
                *(r.c.title, r.c.metadata, r.c.agent_uid, r.c.agent_config, r.c.source),
                *(r.c.artifacts, r.c.worker_host),
            )
            .where(r.c.delivery_id == delivery_id)
            .order_by(r.c.created_at)
        )
        async with services.database.read() as conn:
            return list(await conn.execute(query))

    return client.run(read)


def started(client: GatewayClient, delivery_id: str) -> set[str]:
    return {row.automation_uid for row in runs(client, delivery_id)}


__all__ = ["Signed", "signing"]
