"""/agent/identities: create, list, get, update, delete, with the official client's names."""

from __future__ import annotations

from typing import Any

import oz_agent_sdk

from gateway.foundation.accounts import identities
from gateway.foundation.services import Services
from gateway.platform.factories.foreman import set_foreman as assign_foreman
from tests.platform.runs.official_client import official_client
from tests.support import World

AGENTS = "/agent/identities"


def _create(world: World, headers: dict[str, str] | None = None, **body: Any) -> Any:
    return world.api("POST", AGENTS, headers=headers, json={"name": "Reviewer", **body})


def _secret(world: World, name: str) -> None:
    async def go(services: Services) -> None:
        async with services.database.transaction() as conn:
            await identities.set_team_secret(
                conn, services.secret_box, world.team_uid, name, "value"
            )

    world.client.run(go)


def test_the_official_client_creates_reads_updates_and_deletes(world: World) -> None:
    oz = official_client(world)
    created = oz.agent.agent.create(
        name="Reviewer", description="reviews", skills=["acme/tools:review"], base_model="gpt-5"
    )
    assert (
        created.name == "Reviewer" and created.available and created.skills == ["acme/tools:review"]
    )
    assert created.base_model == "gpt-5" and created.memory.attached_stores == []
    key = (created.model_extra or {})["api_key"]  # shown once, beside the client's fields
    assert key.startswith("gk_")
    listed = oz.agent.agent.list()
    assert [a.uid for a in listed.agents] == [world.agent_uid, created.uid]
    assert oz.agent.agent.get(created.uid).description == "reviews"
    changed = oz.agent.agent.update(created.uid, description="", prompt="Be brief.", skills=[])
    assert changed.description is None and changed.prompt == "Be brief." and changed.skills == []
    assert changed.updated_at >= created.updated_at
    # the new key is agent credentials of the team
    as_agent = official_client(world, key)
    assert {a.uid for a in as_agent.agent.agent.list().agents} == {world.agent_uid, created.uid}
    oz.agent.agent.delete(created.uid)
    try:
        oz.agent.agent.get(created.uid)
        raise AssertionError("the agent is still there")
    except oz_agent_sdk.NotFoundError:
        pass


def test_create_fields_and_validation(world: World) -> None:
    _secret(world, "gh-token")
    created = _create(
        world,
        agent_type="REVIEW",
        credential_strategy="CREATOR",
        environment_id="default",
        worker_host="  warp  ",
        factory_uid=world.factory_uid,
        mcp_servers={"docs": {"url": "https://mcp.example.test"}},
        secrets=[{"name": "gh-token"}],
        skills=["acme/tools:.claude/skills/review/SKILL.md"],
    )
    assert created.status_code == 201, created.text
    agent = created.json()
    assert agent["worker_host"] == "warp" and agent["secrets"] == [{"name": "gh-token"}]
    assert agent["factory_uid"] == world.factory_uid and agent["team_uid"] == world.team_uid
    assert agent["agent_type"] == "REVIEW" and agent["default_runner_uid"] == ""
    assert "api_key" not in world.api("GET", f"{AGENTS}/{agent['uid']}").json()
    by_factory = world.api("GET", AGENTS, params={"factory_uid": world.factory_uid}).json()
    assert [a["uid"] for a in by_factory["agents"]] == [agent["uid"]]
    for body, field in (
        ({"name": " "}, "name"),
        ({"base_model": "nope"}, "base_model"),
        ({"environment_id": "nope"}, "environment_id"),
        ({"factory_uid": "fac_nope"}, "factory_uid"),
        ({"skills": ["not a spec"]}, "skills[0]"),
        ({"skills": ["a/b:c", "a/b:c"]}, "skills[1]"),
        ({"secrets": [{"name": "missing"}]}, "secrets[0].name"),
        ({"agent_type": "BOSS"}, "agent_type"),
        ({"harness": {"type": "claude"}}, "harness"),
    ):
        response = _create(world, **body)
        assert response.status_code == 400, body
        assert response.json()["detail"].startswith(field), (body, response.json())


def test_access_and_team_selection(world: World) -> None:
    assert _create(world, headers={}).status_code == 401
    as_agent = _create(world, headers=world.agent)
    assert as_agent.status_code == 403 and as_agent.json()["code"] == "forbidden"
    foreign = {**world.user, "X-Service-Team-Uid": world.other_team_uid}
    assert _create(world, headers=foreign).status_code == 403
    assert world.api("GET", AGENTS, headers=foreign).status_code == 403
    assert world.api("GET", AGENTS, headers={}).status_code == 401
    assert world.api("GET", AGENTS, params={"factory_uid": "\u0000"}).status_code == 400

    # a user of two teams names the team to create in
    async def join(services: Services) -> None:
        async with services.database.transaction() as conn:
            me = await identities.authenticate(conn, world.user_key)
            assert me is not None and me.email is not None
            await identities.create_user(conn, world.other_team_uid, me.email)

    world.client.run(join)
    ambiguous = _create(world)
    assert ambiguous.status_code == 400
    assert ambiguous.json()["detail"].startswith("X-Service-Team-Uid")
    chosen = _create(world, headers={**world.user, "X-Service-Team-Uid": world.other_team_uid})
    assert chosen.status_code == 201 and chosen.json()["team_uid"] == world.other_team_uid
    mine = world.api("GET", AGENTS, headers={**world.user, "X-Service-Team-Uid": world.team_uid})
    assert [a["uid"] for a in mine.json()["agents"]] == [world.agent_uid]


def test_get_update_delete_errors(world: World) -> None:
    stranger_agent = world.api(
        "POST", AGENTS, headers=world.stranger, json={"name": "Theirs"}
    ).json()["uid"]
    one = f"{AGENTS}/{{}}"
    for method, body in (("GET", None), ("PUT", {"name": "x"}), ("DELETE", None)):
        at = one.format(stranger_agent)
        assert world.api(method, at, json=body).status_code == 403, method
        assert world.api(method, one.format("agent_nope"), json=body).status_code == 404, method
        assert world.api(method, at, json=body, headers={}).status_code == 401, method
        assert world.api(method, one.format("%00"), json=body).status_code == 400, method
    mine = _create(world).json()["uid"]
    at = one.format(mine)
    assert world.api("PUT", at, json={"name": "Renamed"}, headers=world.agent).status_code == 403
    assert world.api("DELETE", at, headers=world.agent).status_code == 403
    for body, field in (
        ({"name": None}, "name"),
        ({"mcp_servers": None}, "mcp_servers"),
        ({"base_model": "nope"}, "base_model"),
        ({"colour": "red"}, "colour"),
    ):
        response = world.api("PUT", at, json=body)
        assert response.status_code == 400 and response.json()["detail"].startswith(field), body


def test_update_keeps_what_is_absent_or_null_and_clears_empty_values(world: World) -> None:
    _secret(world, "a")
    uid = _create(
        world,
        description="d",
        base_model="gpt-5",
        mcp_servers={"x": {"url": "https://x.test"}},
        skills=["a/b:c"],
        secrets=[{"name": "a"}],
    ).json()["uid"]
    at = f"{AGENTS}/{uid}"
    kept = world.api("PUT", at, json={"description": None, "skills": None}).json()
    assert kept["description"] == "d" and kept["skills"] == ["a/b:c"]
    assert kept["mcp_servers"] == {"x": {"url": "https://x.test"}}
    cleared = world.api(
        "PUT",
        at,
        json={"description": "", "base_model": "", "mcp_servers": {}, "secrets": [], "name": "N"},
    ).json()
    assert cleared["name"] == "N" and cleared["secrets"] == [] and cleared["skills"] == ["a/b:c"]
    assert not {"description", "base_model", "mcp_servers"} & set(cleared)


def test_delete_removes_the_keys_and_refuses_a_foreman(world: World) -> None:
    created = _create(world).json()
    key = {"Authorization": f"Bearer {created['api_key']}"}
    assert world.api("GET", AGENTS, headers=key).status_code == 200
    assert world.api("DELETE", f"{AGENTS}/{created['uid']}").status_code == 204
    assert world.api("GET", AGENTS, headers=key).status_code == 401
    assert world.api("GET", f"{AGENTS}/{created['uid']}").status_code == 404

    foreman = world.api("DELETE", f"{AGENTS}/{world.agent_uid}")
    assert foreman.status_code == 409 and foreman.json()["code"] == "agent_is_foreman"
    assert world.factory_uid in foreman.json()["detail"]
    assert world.api("GET", AGENTS, headers=world.agent).status_code == 200  # key kept

    async def hand_over(services: Services) -> None:
        async with services.database.transaction() as conn:
            await assign_foreman(conn, world.factory_uid, None)

    world.client.run(hand_over)
    assert world.api("DELETE", f"{AGENTS}/{world.agent_uid}").status_code == 204
    assert world.api("GET", AGENTS, headers=world.agent).status_code == 401
