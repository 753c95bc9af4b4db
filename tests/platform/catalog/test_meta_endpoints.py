from __future__ import annotations

import jsonschema

from tests.support import World


def test_egress_ranges(world: World) -> None:
    response = world.api("GET", "/networking/egress-ranges")
    assert response.status_code == 200
    body = response.json()
    assert body["ranges"] == body["ipv4"] + body["ipv6"] and body["ranges"]
    assert world.api("GET", "/networking/egress-ranges", headers={}).status_code == 401


def test_schema_is_served_and_is_a_2020_12_schema(world: World) -> None:
    response = world.api("GET", "/factory-files/schemas/v1alpha1/factory.schema.json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "agentDefaults" in schema["properties"]


def test_meta_endpoints_check_credentials(world: World) -> None:
    schema_path = "/factory-files/schemas/v1alpha1/factory.schema.json"
    response = world.api("GET", "/networking/egress-ranges", headers={"Authorization": "Bearer x"})
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    # the schemas are public (factory-format.md §2): a key, good or not, changes nothing
    assert world.api("GET", schema_path, headers={"Authorization": "Bearer x"}).status_code == 200
    foreign_team = {**world.user, "X-Service-Team-Uid": world.other_team_uid}
    assert world.api("GET", "/networking/egress-ranges", headers=foreign_team).status_code == 403
    own_team = {**world.user, "X-Service-Team-Uid": world.team_uid}
    assert world.api("GET", "/networking/egress-ranges", headers=own_team).status_code == 200
    assert world.api("GET", schema_path, headers=world.agent).status_code == 200


def test_egress_ranges_follow_the_setting(tmp_path: object) -> None:
    from tests.conftest import make_settings
    from tests.support import GatewayClient

    settings = make_settings(
        f"sqlite:///{tmp_path}/gw.db", egress_ranges="198.51.100.0/24, 2001:db8:1::/48"
    )
    with GatewayClient.running(settings) as client:
        world = World.create(client)
        body = world.api("GET", "/networking/egress-ranges").json()
    assert body == {
        "ranges": ["198.51.100.0/24", "2001:db8:1::/48"],
        "ipv4": ["198.51.100.0/24"],
        "ipv6": ["2001:db8:1::/48"],
    }
