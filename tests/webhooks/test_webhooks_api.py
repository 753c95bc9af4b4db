"""Webhook management API: modes, secrets shown once, limits, patch, rotate, delete."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.composition.app import openapi_document
from gateway.foundation.accounts import identities
from gateway.foundation.services import Services
from gateway.webhook_gateway.signatures import SCHEME_ALIASES, SCHEMES
from tests.support import World


def create(world: World, **body: Any) -> Any:
    return world.api(
        "POST", f"/factory/{world.factory_uid}/webhooks", json={"name": "hook", **body}
    )


def set_team_secret(world: World, name: str, value: str) -> None:
    async def run(services: Services) -> None:
        async with services.database.transaction() as conn:
            await identities.set_team_secret(conn, services.secret_box, world.team_uid, name, value)

    world.client.run(run)


def test_token_mode_generates_a_secret_shown_once(world: World) -> None:
    response = create(world)
    assert response.status_code == 201
    body = response.json()
    assert body["auth_mode"] == "token" and body["enabled"] is True and body["has_secret"] is True
    assert body["secret"].startswith("wht_")
    assert body["ingress_url"] == f"https://hooks.example.test/webhooks/w/{body['uid']}"
    fetched = world.api("GET", f"/factory/{world.factory_uid}/webhooks/{body['uid']}").json()
    assert "secret" not in fetched
    listed = world.api("GET", f"/factory/{world.factory_uid}/webhooks").json()["webhooks"]
    assert [w["uid"] for w in listed] == [body["uid"]] and "secret" not in listed[0]


def test_url_token_embeds_the_token_once_then_renders_a_placeholder(world: World) -> None:
    body = create(world, auth_mode="url_token").json()
    assert body["ingress_url"].endswith(f"/webhooks/w/{body['uid']}/{body['secret']}")
    fetched = world.api("GET", f"/factory/{world.factory_uid}/webhooks/{body['uid']}").json()
    assert fetched["ingress_url"].endswith(f"/webhooks/w/{body['uid']}/{{token}}")


def test_secret_name_must_exist_and_be_url_safe_for_url_tokens(world: World) -> None:
    set_team_secret(world, "plain", "abc-DEF_123")
    set_team_secret(world, "spaced", "not url safe!")
    assert create(world, secret_name="missing").json()["detail"].startswith("secret_name")
    assert create(world, auth_mode="url_token", secret_name="spaced").status_code == 400
    made = create(world, auth_mode="url_token", secret_name="plain")
    assert made.status_code == 201
    assert "secret" not in made.json() and made.json()["secret_name"] == "plain"


def test_standard_webhooks_secret_is_generated_for_signature_mode(world: World) -> None:
    body = create(world, auth_mode="signature", signature_scheme="standard_webhooks").json()
    assert body["secret"].startswith("whsec_")
    assert body["signature_scheme"] == "standard_webhooks"


def test_the_hyphenated_scheme_name_is_accepted_and_stored_as_files_name_it(world: World) -> None:
    made = create(world, auth_mode="signature", signature_scheme="standard-webhooks")
    assert made.status_code == 201, made.text
    assert made.json()["signature_scheme"] == "standard_webhooks"
    assert made.json()["secret"].startswith("whsec_")
    uid = made.json()["uid"]
    fetched = world.api("GET", f"/factory/{world.factory_uid}/webhooks/{uid}").json()
    assert fetched["signature_scheme"] == "standard_webhooks"
    # rotating generates again: the stored name is the one the service generates secrets for
    rotated = world.api("POST", f"/factory/{world.factory_uid}/webhooks/{uid}/rotate-secret")
    assert rotated.status_code == 200 and rotated.json()["secret"].startswith("whsec_")


@pytest.mark.parametrize("scheme", ["pagerduty", "sentry", "vercel"])
def test_the_new_schemes_take_the_provider_s_secret(world: World, scheme: str) -> None:
    made = create(world, auth_mode="signature", signature_scheme=scheme, secret="provider-secret")
    assert made.status_code == 201, made.text
    assert made.json()["signature_scheme"] == scheme and "secret" not in made.json()
    without = create(world, name="later", auth_mode="signature", signature_scheme=scheme)
    assert without.status_code == 201 and without.json()["has_secret"] is False
    rotate = f"/factory/{world.factory_uid}/webhooks/{without.json()['uid']}/rotate-secret"
    assert world.api("POST", rotate).status_code == 400  # the provider issues it, not us


@pytest.mark.parametrize("scheme", ["Standard-Webhooks", "standard webhooks", "gitlab", "jira"])
def test_unknown_scheme_names_are_400_naming_the_field(world: World, scheme: str) -> None:
    refused = create(world, auth_mode="signature", signature_scheme=scheme)
    assert refused.status_code == 400
    assert "signature_scheme" in refused.json()["detail"]


def test_the_documented_enums_follow_the_registry() -> None:
    schemas = openapi_document()["components"]["schemas"]

    def enum(schema: str) -> list[str]:
        options = schemas[schema]["properties"]["signature_scheme"]["anyOf"]
        return next(option["enum"] for option in options if "enum" in option)

    assert enum("WebhookCreate") == sorted([*SCHEMES, *SCHEME_ALIASES])  # aliases accepted
    assert enum("Webhook") == sorted(SCHEMES)  # and never answered


def test_provider_secret_is_never_echoed(world: World) -> None:
    body = create(
        world, auth_mode="signature", signature_scheme="stripe", secret="whsec_test_123"
    ).json()
    assert "secret" not in body and body["has_secret"] is True
    later = create(world, auth_mode="signature", signature_scheme="github").json()
    assert later["has_secret"] is False  # supplied in a second step
    rotated = world.api(
        "POST",
        f"/factory/{world.factory_uid}/webhooks/{later['uid']}/rotate-secret",
        json={"secret": "gh-secret"},
    )
    assert rotated.status_code == 200 and "secret" not in rotated.json()
    fetched = world.api("GET", f"/factory/{world.factory_uid}/webhooks/{later['uid']}").json()
    assert fetched["has_secret"] is True


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": " "}, "name"),
        ({"name": 5}, "name"),
        ({"auth_mode": "magic"}, "auth_mode"),
        ({"auth_mode": "signature"}, "signature_scheme"),
        ({"auth_mode": "signature", "signature_scheme": "carrier-pigeon"}, "signature_scheme"),
        ({"signature_scheme": "stripe"}, "signature_scheme"),
        ({"secret": "mine"}, "secret"),
        (
            {
                "auth_mode": "signature",
                "signature_scheme": "standard_webhooks",
                "secret": "whsec_!!",
            },
            "secret",
        ),
        ({"delivery_id_header": "bad header"}, "delivery_id_header"),
        # a credential or signature header would be stored as the identity of every delivery
        ({"delivery_id_header": "Authorization"}, "delivery_id_header"),
        ({"delivery_id_header": "Stripe-Signature"}, "delivery_id_header"),
        ({"enabled": "yes"}, "enabled"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_invalid_bodies_name_the_field(
    shared_world: World, body: dict[str, Any], field: str
) -> None:
    response = create(shared_world, **body)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["detail"].startswith(field)


def test_twenty_webhooks_per_factory(world: World) -> None:
    uids = [create(world, name=f"h{i}").json()["uid"] for i in range(20)]
    over = create(world, name="one too many")
    assert over.status_code == 409 and over.json()["code"] == "webhook_limit_reached"
    assert (
        world.api("DELETE", f"/factory/{world.factory_uid}/webhooks/{uids[0]}").status_code == 204
    )
    assert create(world, name="room again").status_code == 201


def test_patch_changes_only_allowed_fields(world: World) -> None:
    uid = create(world).json()["uid"]
    path = f"/factory/{world.factory_uid}/webhooks/{uid}"
    patched = world.api(
        "PATCH",
        path,
        json={"name": "renamed", "enabled": False, "delivery_id_header": "X-Event-Id"},
    )
    assert patched.status_code == 200
    assert patched.json()["name"] == "renamed" and patched.json()["enabled"] is False
    assert patched.json()["delivery_id_header"] == "x-event-id"
    assert (
        world.api("PATCH", path, json={"delivery_id_header": None}).json()["delivery_id_header"]
        is None
    )
    refused = world.api("PATCH", path, json={"delivery_id_header": "X-Hub-Signature-256"})
    assert refused.status_code == 400
    assert refused.json()["detail"].startswith("delivery_id_header: 'x-hub-signature-256'")
    assert world.api("GET", path).json()["delivery_id_header"] is None  # unchanged
    assert (
        world.api("PATCH", path, json={"auth_mode": "url_token"})
        .json()["detail"]
        .startswith("auth_mode")
    )
    assert world.api("PATCH", path, json={"enabled": "no"}).status_code == 400


def test_rotate_replaces_the_token_and_managed_secrets_refuse(world: World) -> None:
    made = create(world).json()
    path = f"/factory/{world.factory_uid}/webhooks/{made['uid']}/rotate-secret"
    rotated = world.api("POST", path)
    assert rotated.status_code == 200 and rotated.json()["secret"] != made["secret"]
    set_team_secret(world, "shared", "abc")
    managed = create(world, name="managed", secret_name="shared").json()
    refused = world.api(
        "POST", f"/factory/{world.factory_uid}/webhooks/{managed['uid']}/rotate-secret"
    )
    assert refused.status_code == 409 and refused.json()["code"] == "managed_secret"


def test_delete_then_everything_is_404(world: World) -> None:
    uid = create(world).json()["uid"]
    path = f"/factory/{world.factory_uid}/webhooks/{uid}"
    assert world.api("DELETE", path).status_code == 204
    assert world.api("GET", path).status_code == 404
    assert world.api("DELETE", path).status_code == 404
    assert world.api("PATCH", path, json={"name": "x"}).status_code == 404
    assert world.api("POST", f"{path}/rotate-secret").status_code == 404


def test_access_rules(world: World) -> None:
    path = f"/factory/{world.factory_uid}/webhooks"
    assert world.api("GET", path, headers={}).status_code == 401
    assert world.api("GET", path, headers=world.stranger).status_code == 403
    assert world.api("GET", "/factory/fac_missing/webhooks").status_code == 404
    assert world.api("POST", path, headers=world.stranger, json={"name": "x"}).status_code == 403


def test_changes_are_published_with_increasing_versions(world: World) -> None:
    seen: list[tuple[str, int]] = []

    async def listen(services: Services) -> None:
        async def record(uid: str, version: int) -> None:
            seen.append((uid, version))

        services.config_publisher.listeners.append(record)  # type: ignore[attr-defined]

    world.client.run(listen)
    uid = create(world).json()["uid"]
    world.api("PATCH", f"/factory/{world.factory_uid}/webhooks/{uid}", json={"enabled": False})
    world.api("POST", f"/factory/{world.factory_uid}/webhooks/{uid}/rotate-secret")
    world.api("DELETE", f"/factory/{world.factory_uid}/webhooks/{uid}")
    assert [v for u, v in seen if u == uid] == [1, 2, 3, 4]
