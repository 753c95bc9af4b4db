"""The console's session, CSRF and escaping rules, on the app itself (SQLite and PostgreSQL)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.composition.app import create_app
from gateway.platform import agent_console
from gateway.webhook_gateway import console
from tests.support import GatewayClient, World, eventually


def login(client: GatewayClient, key: str) -> None:
    answer = client.post("/console/login", data={"api_key": key}, follow_redirects=False)
    assert answer.status_code == 303, answer.text


def csrf_of(client: GatewayClient, path: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', client.get(path).text)
    assert found is not None
    return found.group(1)


@pytest.fixture
def https_client(world: World) -> Iterator[GatewayClient]:
    """A second app on the world's store, reached over https from afar."""
    app = create_app(world.client.services.settings)
    with GatewayClient(app, base_url="https://gateway.example", client=("203.0.113.7", 4000)) as c:
        yield c


def test_login_sets_an_httponly_strict_cookie_and_logout_ends_it(world: World) -> None:
    client = world.client
    assert client.get("/console/", follow_redirects=False).headers["location"] == "/console/login"
    wrong = client.post("/console/login", data={"api_key": "nope"})
    assert wrong.status_code == 401 and "Unknown or revoked API key" in wrong.text
    answer = client.post("/console/login", data={"api_key": world.user_key}, follow_redirects=False)
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/console" in cookie
    assert "Secure" not in cookie  # plain http from this machine (see docs/console.md)
    assert world.user_key not in cookie
    page = client.get("/console/")
    assert page.status_code == 200 and "Factory A" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    token = csrf_of(client, "/console/")
    assert client.post("/console/logout", data={"csrf": token}).url.path == "/console/login"
    assert client.get("/console/", follow_redirects=False).status_code == 303


def test_over_https_the_cookie_is_secure_and_plain_http_from_afar_is_refused(
    world: World, https_client: GatewayClient
) -> None:
    answer = https_client.post(
        "/console/login", data={"api_key": world.user_key}, follow_redirects=False
    )
    assert answer.status_code == 303 and "Secure" in answer.headers["set-cookie"]
    assert https_client.get("/console/").status_code == 200
    afar = ("203.0.113.7", 1)
    with GatewayClient(https_client.app, base_url="http://gateway.example", client=afar) as plain:
        refused = plain.post("/console/login", data={"api_key": world.user_key})
    assert refused.status_code == 403 and "https" in refused.text


def test_posts_need_the_csrf_token_and_the_same_origin(world: World) -> None:
    client = world.client
    login(client, world.user_key)
    made = world.api("POST", f"/factory/{world.factory_uid}/webhooks", json={"name": "h"}).json()
    base = f"/console/f/{world.factory_uid}/w/{made['uid']}"
    form = {"filter": '{"a": ["b"]}', "last": "5"}
    missing = client.post(f"{base}/filter-test", data=form)
    assert missing.status_code == 403 and "CSRF" in missing.text
    token = csrf_of(client, base)
    foreign = client.post(
        f"{base}/filter-test", data=form | {"csrf": token}, headers={"Origin": "https://evil.test"}
    )
    assert foreign.status_code == 403
    ok = client.post(f"{base}/filter-test", data=form | {"csrf": token})
    assert ok.status_code == 200 and "0 of 0 deliveries match" in ok.text
    bad = client.post(f"{base}/filter-test", data={"filter": '{"a": 1}', "csrf": token})
    assert bad.status_code == 400 and "filter: $.a" in bad.text


def test_payloads_are_escaped_and_other_teams_see_nothing(world: World) -> None:
    client = world.client
    made = world.api("POST", f"/factory/{world.factory_uid}/webhooks", json={"name": "h"}).json()
    sent = client.post(
        f"/webhooks/w/{made['uid']}",
        json={"title": "<script>alert(1)</script>"},
        headers={"Authorization": f"Bearer {made['secret']}"},
    )
    delivery_id = sent.json()["delivery_id"]
    login(client, world.user_key)
    path = f"/console/f/{world.factory_uid}/w/{made['uid']}/d/{delivery_id}"
    page = eventually(lambda: (p := client.get(path)).status_code == 200 and p)
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    login(client, world.stranger_key)
    hidden = client.get(path)  # as the API answers: another team's factory is forbidden
    assert hidden.status_code == 403 and "&lt;script&gt;" not in hidden.text
    assert client.get(f"/console/f/{world.factory_uid}").status_code == 403


def test_the_same_replay_form_sent_twice_replays_once(world: World) -> None:
    client = world.client
    made = world.api("POST", f"/factory/{world.factory_uid}/webhooks", json={"name": "h"}).json()
    sent = client.post(
        f"/webhooks/w/{made['uid']}",
        json={"n": 1},
        headers={"Authorization": f"Bearer {made['secret']}"},
    )
    login(client, world.user_key)
    page = f"/console/f/{world.factory_uid}/w/{made['uid']}/d/{sent.json()['delivery_id']}"
    html = eventually(
        lambda: (p := client.get(page)).status_code == 200 and "nonce" in p.text and p
    )
    fields = dict(re.findall(r'name="(csrf|nonce)" value="([^"]+)"', html.text))
    first = client.post(page + "/replay", data=fields, follow_redirects=False)
    second = client.post(page + "/replay", data=fields, follow_redirects=False)
    assert first.status_code == second.status_code == 303
    assert first.headers["location"] == second.headers["location"] != page
    other = dict(fields, nonce="another-form")
    third = client.post(page + "/replay", data=other, follow_redirects=False)
    assert third.headers["location"] != first.headers["location"]
    replays = world.api("GET", f"/factory/{world.factory_uid}/webhooks/{made['uid']}/replays")
    assert len(replays.json()["replays"]) == 2


def test_names_and_an_echoed_filter_are_escaped_wherever_they_appear(world: World) -> None:
    client = world.client
    name = '<img src=x onerror="alert(1)">'
    made = world.api("POST", f"/factory/{world.factory_uid}/webhooks", json={"name": name}).json()
    login(client, world.user_key)
    base = f"/console/f/{world.factory_uid}/w/{made['uid']}"
    for path in (f"/console/f/{world.factory_uid}", base):
        page = client.get(path)
        assert page.status_code == 200 and "<img" not in page.text and "&lt;img" in page.text
    sent = '{"a": ["</textarea><script>x()</script>"]}'
    form = {"filter": sent, "csrf": csrf_of(client, base)}
    echoed = client.post(f"{base}/filter-test", data=form)
    assert echoed.status_code == 200 and "<script>x()" not in echoed.text
    assert "&lt;/textarea&gt;&lt;script&gt;x()" in echoed.text


def test_no_template_turns_escaping_off() -> None:
    folders = (Path(p.__file__).parent / "templates" for p in (console, agent_console))
    templates = sorted(path for folder in folders for path in folder.glob("*.html"))
    assert templates
    unsafe = re.compile(r"\|\s*safe\b|autoescape\s+false|markup\(", re.IGNORECASE)
    assert [p.name for p in templates if unsafe.search(p.read_text())] == []
