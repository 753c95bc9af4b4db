"""Reply credentials on provider connections (CONTRACT §10): taken per provider, checked whole,
stored encrypted, never answered or logged; `replies` says whether the connection can reply.
On both stores (the `world` fixture)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from sqlalchemy import select

from gateway.foundation.store import tables as t
from tests.support import Cli, World

BASE = "/provider-connections"
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PEM = RSA_KEY.private_bytes(
    serialization.Encoding.PEM,
    serialization.PrivateFormat.TraditionalOpenSSL,
    serialization.NoEncryption(),
).decode()
APP = {"app_id": "123456", "private_key": PEM, "installation_id": "987654"}
SECRETS = ("ghp_s3cret_token", "xoxb-s3cret", "BEGIN RSA PRIVATE KEY", "ATATT-s3cret")


def connect(world: World, **body: Any) -> dict[str, Any]:
    response = world.api("POST", BASE, json=body)
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()
    return made


def stored(world: World, uid: str) -> Any:
    async def read(services: Any) -> Any:
        c = t.provider_connections
        async with services.database.read() as conn:
            row = (await conn.execute(select(c).where(c.c.uid == uid))).one()
        return row, services.secret_box

    return world.client.run(read)


def test_credentials_are_taken_stored_encrypted_and_never_answered(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        made = connect(world, provider="github", api_token="ghp_s3cret_token")
        listed = world.api("GET", BASE).text
        one = world.api("GET", f"{BASE}/{made['uid']}").text
    assert made["replies"] is True and made["credentials"] == ["api_token"]
    assert "api_base_url" not in made and "reply_templates" not in made
    for text in (str(made), listed, one, caplog.text):
        assert "ghp_s3cret_token" not in text
    row, box = stored(world, made["uid"])
    assert "ghp_s3cret_token" not in row.credentials_encrypted
    assert '"api_token":"ghp_s3cret_token"' in box.decrypt(row.credentials_encrypted)


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"provider": "github", **APP, "api_base_url": "https://ghe.example/api/v3/"},
         ["app_id", "private_key", "installation_id"]),
        ({"provider": "gitlab", "api_token": "glpat-x"}, ["api_token"]),
        ({"provider": "slack", "bot_token": "xoxb-s3cret"}, ["bot_token"]),
        ({"provider": "linear", "api_token": "lin_api_x"}, ["api_token"]),
        ({"provider": "jira", "email": "bot@acme.example", "api_token": "ATATT-s3cret",
          "api_base_url": "https://acme.atlassian.net"}, ["api_token", "email"]),
    ],
)  # fmt: skip
def test_each_provider_takes_its_credentials(
    world: World, body: dict[str, Any], names: list[str]
) -> None:
    made = connect(world, **body)
    assert made["replies"] is True and made["credentials"] == names
    if "api_base_url" in body:
        assert made["api_base_url"] == body["api_base_url"].rstrip("/")
    assert not any(secret in str(made) for secret in SECRETS)


def ec_key() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"provider": "slack", "api_token": "x"}, "api_token: Slack connections take no api_token"),
        ({"provider": "github", "app_id": "1", "installation_id": "2"},
         "private_key: GitHub needs"),
        ({"provider": "github", "api_token": "x", **APP}, "app_id: GitHub takes api_token or"),
        ({"provider": "github", **{**APP, "private_key": "not a key"}}, "private_key: not a PEM"),
        ({"provider": "github", **{**APP, "private_key": ec_key()}}, "private_key: not an RSA key"),
        ({"provider": "jira", "email": "a@b.c", "api_token": "x"}, "api_base_url: required"),
        ({"provider": "jira", "email": "a@b.c"}, "api_token: Jira needs"),
        ({"provider": "slack", "bot_token": "not-slack"}, "bot_token"),
        ({"provider": "github", "installation_id": "12x"}, "installation_id"),
        ({"provider": "gitlab", "api_base_url": "https://u:p@git.example/api/v4"}, "api_base_url"),
        ({"provider": "gitlab", "api_base_url": "ftp://git.example"}, "api_base_url"),
        ({"provider": "github", "reply_templates": {"started": "{% if %}"}},
         "reply_templates.started: line 1"),
        ({"provider": "github", "reply_templates": {"begun": "x"}}, "begun"),
    ],
)  # fmt: skip
def test_what_cannot_work_is_a_400_naming_the_field(
    world: World, body: dict[str, Any], problem: str
) -> None:
    response = world.api("POST", BASE, json=body)
    assert response.status_code == 400, response.text
    assert problem in response.json()["detail"]
    assert world.api("GET", BASE).json() == {"provider_connections": []}


def test_patch_replaces_removes_and_keeps_the_set_whole(world: World) -> None:
    made = connect(world, provider="github")
    one = f"{BASE}/{made['uid']}"
    assert made["replies"] is False and "credentials" not in made  # ingress only
    token = world.api("PATCH", one, json={"api_token": "ghp_s3cret_token"}).json()
    assert token["replies"] is True and token["credentials"] == ["api_token"]
    mixed = world.api("PATCH", one, json=APP)
    assert mixed.status_code == 400 and mixed.json()["detail"].startswith("app_id: GitHub takes")
    app = world.api("PATCH", one, json={**APP, "api_token": None}).json()
    assert app["credentials"] == ["app_id", "private_key", "installation_id"]
    renamed = world.api("PATCH", one, json={"name": "Acme"}).json()  # credentials untouched
    assert renamed["credentials"] == app["credentials"] and renamed["name"] == "Acme"
    half = world.api("PATCH", one, json={"private_key": None})
    assert half.status_code == 400 and half.json()["detail"].startswith("private_key: GitHub needs")
    cleared = world.api(
        "PATCH", one, json={"app_id": None, "private_key": None, "installation_id": None}
    )
    assert cleared.json()["replies"] is False and "credentials" not in cleared.json()
    row, _ = stored(world, made["uid"])
    assert row.credentials_encrypted is None


def test_jira_keeps_its_email_when_the_token_rotates(world: World) -> None:
    made = connect(world, provider="jira", email="bot@acme.example", api_token="old",
                   api_base_url="https://acme.atlassian.net")  # fmt: skip
    rotated = world.api("PATCH", f"{BASE}/{made['uid']}", json={"api_token": "ATATT-s3cret"})
    assert rotated.json()["credentials"] == ["api_token", "email"]
    row, box = stored(world, made["uid"])
    assert (
        box.decrypt(row.credentials_encrypted)
        == '{"api_token":"ATATT-s3cret","email":"bot@acme.example"}'
    )
    no_site = world.api("PATCH", f"{BASE}/{made['uid']}", json={"api_base_url": None})
    assert no_site.status_code == 400 and no_site.json()["detail"].startswith("api_base_url")


def test_reply_templates_are_kept_and_answered(world: World) -> None:
    templates = {"started": "{{ bold(agent.name) }} is on it: {{ link(run.url, 'the run') }}"}
    made = connect(world, provider="slack", reply_templates=templates)
    assert made["reply_templates"] == templates and made["replies"] is False
    one = f"{BASE}/{made['uid']}"
    bad = world.api("PATCH", one, json={"reply_templates": {"ended": "{{ run.nope }}"}})
    assert bad.status_code == 400
    assert (
        bad.json()["detail"]
        == "reply_templates.ended: UndefinedError: 'dict object' has no attribute 'nope'"
    )
    assert world.api("GET", one).json()["reply_templates"] == templates
    removed = world.api("PATCH", one, json={"reply_templates": None}).json()
    assert "reply_templates" not in removed


def test_admin_connect_reads_secrets_from_files(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    team = cli.admin("create-team", "--name", "Ops")["team_uid"]
    key = cli.store.parent / "app.pem"
    key.write_text(PEM)
    app = cli.admin(
        "connect", "github", "--team", team, "--app-id", "123456",
        "--installation-id", "987654", "--private-key-file", str(key),
        "--api-base-url", "https://ghe.example/api/v3",
    )  # fmt: skip
    assert app["replies"] is True and app["credentials"] == [
        "app_id",
        "private_key",
        "installation_id",
    ]
    assert app["api_base_url"] == "https://ghe.example/api/v3" and "BEGIN" not in str(app)
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("xoxb-s3cret\n"))
    slack = cli.admin("connect", "slack", "--team", team, "--bot-token-file", "-")
    assert slack["credentials"] == ["bot_token"] and "xoxb" not in str(slack)
    token = cli.store.parent / "token"
    token.write_text("glpat-s3cret\n")
    bare = cli.admin("connect", "linear", "--team", team)
    assert bare["replies"] is False and "credentials" not in bare
    code, _, err = cli.run(
        "admin", "connect", "slack", "--team", team, "--api-token-file", str(token)
    )
    assert code == 1 and "api_token: Slack connections take no api_token" in err
    code, _, err = cli.run(
        "admin", "connect", "gitlab", "--team", team, "--api-token-file", "/nope"
    )
    assert code == 1 and "api_token: cannot read /nope" in err
