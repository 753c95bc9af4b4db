from __future__ import annotations

import jsonschema
import pytest

from gateway.platform.factory_files.schema import definition_schema
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


GOOD_WEBHOOKS = [
    {"authMode": "token"},
    {"authMode": "url_token", "secretName": "gh"},
    {"authMode": "signature", "signatureScheme": "stripe", "secretName": "stripe-signing"},
    *(
        {"authMode": "signature", "signatureScheme": scheme, "secretName": "signing"}
        for scheme in ("standard_webhooks", "standard-webhooks", "pagerduty", "sentry", "vercel")
    ),
    {},
]
BAD_WEBHOOKS = [
    {"authMode": "signature"},
    {"authMode": "token", "signatureScheme": "stripe"},
    {"authMode": "signature", "signatureScheme": "gitlab", "secretName": "signing"},
    {"authMode": "signature", "signatureScheme": "Standard_Webhooks", "secretName": "signing"},
    {"authMode": "magic"},
    {"authMode": "token", "colour": "red"},
]
GOOD_AUTOMATION = {
    "prompt": "Triage the issue",
    "triggers": [
        {
            "provider": "webhook",
            "event": "received",
            "filter": {"webhook_ids": ["wh_1"], "payload": {"action": ["opened"]}},
        }
    ],
}


@pytest.mark.parametrize("doc", GOOD_WEBHOOKS)
def test_good_webhook_files_validate(doc: dict[str, object]) -> None:
    jsonschema.validate(doc, definition_schema("webhook"), cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("doc", BAD_WEBHOOKS)
def test_bad_webhook_files_do_not(doc: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, definition_schema("webhook"), cls=jsonschema.Draft202012Validator)


def test_automation_files() -> None:
    schema = definition_schema("automation")
    jsonschema.validate(GOOD_AUTOMATION, schema, cls=jsonschema.Draft202012Validator)
    two_ids = {
        **GOOD_AUTOMATION,
        "triggers": [{**GOOD_AUTOMATION["triggers"][0], "filter": {"webhook_ids": ["a", "b"]}}],
    }  # type: ignore[index, dict-item]
    for bad in ({"prompt": "x"}, two_ids, {**GOOD_AUTOMATION, "extra": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema, cls=jsonschema.Draft202012Validator)


def test_meta_endpoints_check_credentials(world: World) -> None:
    schema_path = "/factory-files/schemas/v1alpha1/factory.schema.json"
    for path in ("/networking/egress-ranges", schema_path):
        response = world.api("GET", path, headers={"Authorization": "Bearer wrong"})
        assert response.status_code == 401
        assert response.headers["content-type"] == "application/problem+json"
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
