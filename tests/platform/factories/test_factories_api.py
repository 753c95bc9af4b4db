from __future__ import annotations

from tests.support import World


def test_get_factory(world: World) -> None:
    response = world.api("GET", f"/factory/{world.factory_uid}")
    assert response.status_code == 200
    body = response.json()
    assert body["uid"] == world.factory_uid
    assert body["team_uid"] == world.team_uid
    assert body["foreman_agent_uid"] == world.agent_uid


def test_factory_access_follows_team_membership(world: World) -> None:
    assert (
        world.api("GET", f"/factory/{world.factory_uid}", headers=world.stranger).status_code == 403
    )
    assert world.api("GET", "/factory/fac_nope").status_code == 404
    assert world.api("GET", f"/factory/{world.factory_uid}", headers={}).status_code == 401
    assert (
        world.api(
            "GET", f"/factory/{world.factory_uid}", headers={"Authorization": "Bearer x"}
        ).status_code
        == 401
    )


def test_list_search_and_pagination(world: World) -> None:
    from gateway.foundation.accounts import factories

    async def more(services):  # type: ignore[no-untyped-def]
        async with services.database.transaction() as conn:
            for i in range(4):
                await factories.create_factory(
                    conn, world.team_uid, f"Build {i}", f"ALIAS-{i}", None
                )

    world.client.run(more)
    listed = world.api("GET", "/factory", params={"limit": 2}).json()
    assert len(listed["factories"]) == 2 and listed["page_info"]["has_next_page"] is True
    seen = [f["uid"] for f in listed["factories"]]
    cursor = listed["page_info"]["next_cursor"]
    while cursor:
        page = world.api("GET", "/factory", params={"limit": 2, "cursor": cursor}).json()
        seen += [f["uid"] for f in page["factories"]]
        cursor = page["page_info"]["next_cursor"]
    assert len(seen) == 5 and len(set(seen)) == 5
    found = world.api("GET", "/factory", params={"search": "alias-2"}).json()["factories"]
    assert [f["alias"] for f in found] == ["ALIAS-2"]
    assert (
        world.api("GET", "/factory", params={"search": "build"})
        .json()["factories"][0]["name"]
        .startswith("Build")
    )


def test_list_rejects_bad_parameters(world: World) -> None:
    for params in ({"limit": 0}, {"limit": 101}, {"limit": "x"}, {"cursor": "forged"}):
        response = world.api("GET", "/factory", params=params)
        assert response.status_code == 400, params
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == "invalid_request"
    assert (
        world.api("GET", "/factory", params={"team_uid": world.other_team_uid}).status_code == 403
    )
    assert (
        world.api(
            "GET", "/factory", headers={**world.user, "X-Service-Team-Uid": world.other_team_uid}
        ).status_code
        == 403
    )


def test_unknown_route_and_method_are_problems(world: World) -> None:
    response = world.api("GET", "/nope")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    response = world.api("DELETE", f"/factory/{world.factory_uid}")
    assert response.status_code == 405
    assert response.json()["status"] == 405


def test_team_uid_query_takes_precedence_over_the_team_header(world: World) -> None:
    """A header naming a team the caller is not in does not matter when team_uid names one it
    is in (spec 5.4: the parameter overrides the header)."""
    foreign_header = {**world.user, "X-Service-Team-Uid": world.other_team_uid}
    response = world.api(
        "GET", "/factory", headers=foreign_header, params={"team_uid": world.team_uid}
    )
    assert response.status_code == 200, response.text
    assert [f["uid"] for f in response.json()["factories"]] == [world.factory_uid]
    unknown_header = {**world.user, "X-Service-Team-Uid": "team_nope"}
    response = world.api(
        "GET", "/factory", headers=unknown_header, params={"team_uid": world.team_uid}
    )
    assert response.status_code == 200, response.text
