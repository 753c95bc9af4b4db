"""Provider connections through the API (CONTRACT §9): the answers, the secret shown once,
team scope, rotate, disable and delete."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.support import World

BASE = "/provider-connections"
# `replies` says whether the connection can reply (false: it only receives; docs/providers.md)
CONTRACT_FIELDS = {"uid", "provider", "name", "ingress_url", "enabled", "created_at", "replies"}


def connect(world: World, **body: Any) -> Any:
    response = world.api("POST", BASE, json=body)
    assert response.status_code == 201, response.text
    return response.json()


@pytest.mark.parametrize("provider", ["github", "gitlab", "jira"])
def test_the_secret_is_generated_and_shown_once(world: World, provider: str) -> None:
    made = connect(world, provider=provider)
    assert set(made) == CONTRACT_FIELDS | {"secret"}
    assert made["provider"] == provider and made["enabled"] is True and made["replies"] is False
    assert made["ingress_url"] == f"https://hooks.example.test/webhooks/p/{made['uid']}"
    assert made["uid"].startswith("pcn_") and len(made["secret"]) >= 40
    assert made["name"] == {"github": "GitHub", "gitlab": "GitLab", "jira": "Jira"}[provider]
    datetime.fromisoformat(made["created_at"].replace("Z", "+00:00"))
    got = world.api("GET", f"{BASE}/{made['uid']}").json()
    assert got == {key: made[key] for key in CONTRACT_FIELDS}
    listed = world.api("GET", BASE).json()["provider_connections"]
    assert [item["uid"] for item in listed] == [made["uid"]] and "secret" not in listed[0]


@pytest.mark.parametrize("provider", ["slack", "linear"])
def test_provider_issued_secrets_are_brought_not_generated(world: World, provider: str) -> None:
    bare = connect(world, provider=provider, name="  Ops  ")
    assert set(bare) == CONTRACT_FIELDS and bare["name"] == "Ops"
    brought = connect(world, provider=provider, secret="8f742231b10e8888abcd99yyyzzz85a5")
    assert "secret" not in brought
    refused = world.api("POST", f"{BASE}/{bare['uid']}/rotate-secret")
    assert refused.status_code == 400 and refused.json()["detail"].startswith("secret: required")
    rotated = world.api("POST", f"{BASE}/{bare['uid']}/rotate-secret", json={"secret": "s3cr3t"})
    assert rotated.status_code == 200 and rotated.json() == {}


def test_rotate_generates_a_new_secret_and_managed_secrets_are_refused(world: World) -> None:
    made = connect(world, provider="github")
    rotated = world.api("POST", f"{BASE}/{made['uid']}/rotate-secret")
    assert rotated.status_code == 200
    assert set(rotated.json()) == {"secret"} and rotated.json()["secret"] != made["secret"]
    missing = world.api("POST", BASE, json={"provider": "github", "secret_name": "nope"})
    assert missing.status_code == 400 and missing.json()["detail"].startswith("secret_name:")

    async def store_secret(services: Any) -> None:
        from gateway.foundation.accounts import identities

        async with services.database.transaction() as conn:
            await identities.set_team_secret(
                conn, services.secret_box, world.team_uid, "gh", "from-the-vault"
            )

    world.client.run(store_secret)
    managed = connect(world, provider="github", secret_name="gh")
    assert set(managed) == CONTRACT_FIELDS | {"secret_name"} and managed["secret_name"] == "gh"
    refused = world.api("POST", f"{BASE}/{managed['uid']}/rotate-secret")
    assert refused.status_code == 409 and refused.json()["code"] == "managed_secret"


def test_patch_disable_and_delete(world: World) -> None:
    made = connect(world, provider="gitlab", bot="gitlab-bot")
    assert made["bot"] == "gitlab-bot"
    one = f"{BASE}/{made['uid']}"
    changed = world.api("PATCH", one, json={"name": "Forge", "enabled": False, "bot": None})
    assert changed.status_code == 200
    body = changed.json()
    assert body["name"] == "Forge" and body["enabled"] is False and "bot" not in body
    assert world.api("PATCH", one, json={"provider": "slack"}).status_code == 400
    assert world.api("DELETE", one).status_code == 204
    assert world.api("GET", one).status_code == 404
    assert world.api("DELETE", one).status_code == 404
    assert world.api("GET", BASE).json() == {"provider_connections": []}


def test_team_scope_and_who_may_manage(world: World) -> None:
    made = connect(world, provider="slack")
    one = f"{BASE}/{made['uid']}"
    assert world.api("GET", one, headers=world.stranger).status_code == 403
    assert world.api("GET", BASE, headers=world.stranger).json() == {"provider_connections": []}
    assert world.api("DELETE", one, headers=world.stranger).status_code == 403
    # an agent key of the team reads, but does not manage, the team's connections
    assert world.api("GET", one, headers=world.agent).status_code == 200
    refused = world.api("POST", BASE, headers=world.agent, json={"provider": "github"})
    assert refused.status_code == 403
    assert world.api("PATCH", one, headers=world.agent, json={"name": "x"}).status_code == 403
    other_team = world.api(
        "GET", BASE, headers=world.user | {"X-Service-Team-Uid": world.other_team_uid}
    )
    assert other_team.status_code == 403


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"provider": "teams"}, "provider:"),
        ({"provider": "github", "secret": "a", "secret_name": "b"}, "secret_name"),
        ({"provider": "github", "name": " "}, "name:"),
        ({"provider": "gitlab", "bot": "two words"}, "bot:"),
        ({"provider": "github", "extra": 1}, "extra"),
    ],
)
def test_invalid_bodies_name_the_field(world: World, body: dict[str, Any], field: str) -> None:
    response = world.api("POST", BASE, json=body)
    assert response.status_code == 400
    assert field in response.json()["detail"]
