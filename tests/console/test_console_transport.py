"""The console behind proxies (GATEWAY_TRUSTED_PROXIES decides whose forwarded headers count) and
its sessions kept on the server (logging out kills every copy of the cookie), on SQLite and
PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import orjson

from gateway.kernel.security import SecretBox
from gateway.webhook_gateway.console.session import COOKIE
from tests.conftest import make_settings
from tests.console.test_console_pages import csrf_of, login
from tests.support import GatewayClient, World

BROWSER = "203.0.113.7"  # a client somewhere on the internet
TLS_PROXY = {"X-Forwarded-Proto": "https", "X-Forwarded-For": BROWSER}


@contextmanager
def console(database_url: str, peer: str, trusted: str = "") -> Iterator[GatewayClient]:
    """The app seen from `peer` over plain http, with GATEWAY_TRUSTED_PROXIES=`trusted`."""
    settings = make_settings(database_url, trusted_proxies=trusted)
    with GatewayClient.running(settings, peer=(peer, 40000)) as client:
        yield client


def _login(client: GatewayClient, key: str, headers: dict[str, str]) -> httpx.Response:
    return client.post(
        "/console/login", data={"api_key": key}, headers=headers, follow_redirects=False
    )


def _cookie(answer: httpx.Response) -> str:
    value = answer.headers["set-cookie"].split(";", 1)[0]
    assert value.startswith(f"{COOKIE}=")
    return value


def test_behind_a_trusted_tls_proxy_the_cookie_is_secure(database_url: str) -> None:
    with console(database_url, peer="10.0.0.5", trusted="10.0.0.0/8") as client:
        world = World.create(client)
        answer = _login(client, world.user_key, TLS_PROXY)
        assert answer.status_code == 303, answer.text
        assert "Secure" in answer.headers["set-cookie"]
        cookie = {"Cookie": _cookie(answer)}
        page = client.get("/console/", headers={**TLS_PROXY, **cookie})
        assert page.status_code == 200 and "Factory A" in page.text
        # the browser's Origin is https: the console's own origin, as the proxy says
        token = re.findall(r'name="csrf" value="([^"]+)"', page.text)[0]
        origin = {**TLS_PROXY, **cookie, "Origin": "https://testserver"}
        out = client.post("/console/logout", data={"csrf": token}, headers=origin)
        assert out.status_code == 200 and out.url.path == "/console/login"


def test_a_trusted_proxys_plain_http_from_afar_is_refused(database_url: str) -> None:
    with console(database_url, peer="10.0.0.5", trusted="10.0.0.0/8") as client:
        world = World.create(client)
        plain = {"X-Forwarded-Proto": "http", "X-Forwarded-For": BROWSER}
        refused = _login(client, world.user_key, plain)
        assert refused.status_code == 403 and "needs https" in refused.text


def test_forwarded_headers_from_an_untrusted_peer_count_for_nothing(database_url: str) -> None:
    with console(database_url, peer="198.51.100.9", trusted="10.0.0.0/8") as client:
        world = World.create(client)
        refused = _login(client, world.user_key, TLS_PROXY)  # anyone can write these headers
        assert refused.status_code == 403 and "needs https" in refused.text


def test_a_same_host_proxy_does_not_make_every_client_local(database_url: str) -> None:
    # nginx on this machine, plain http, not a trusted proxy: its peer address is loopback
    with console(database_url, peer="127.0.0.1") as client:
        world = World.create(client)
        forwarded = _login(client, world.user_key, {"X-Forwarded-For": BROWSER})
        assert forwarded.status_code == 403
        assert "127.0.0.1, which is not in GATEWAY_TRUSTED_PROXIES" in forwarded.text
        # a browser on this machine itself, no proxy in between: plain http is fine
        local = _login(client, world.user_key, {})
        assert local.status_code == 303 and "Secure" not in local.headers["set-cookie"]


def test_a_trusted_same_host_proxy_serves_plain_http_to_local_clients_only(
    database_url: str,
) -> None:
    with console(database_url, peer="127.0.0.1", trusted="127.0.0.1") as client:
        world = World.create(client)
        afar = _login(client, world.user_key, {"X-Forwarded-For": BROWSER})
        assert afar.status_code == 403
        # a trusted proxy that does not say whom it forwards for: the client is unknown
        assert _login(client, world.user_key, {}).status_code == 403
        local = _login(client, world.user_key, {"X-Forwarded-For": "127.0.0.1"})
        assert local.status_code == 303


def test_logging_out_ends_the_session_for_every_copy_of_the_cookie(world: World) -> None:
    client = world.client
    login(client, world.user_key)
    kept = client.cookies[COOKIE]  # a copy, as a stolen cookie would be
    assert client.get("/console/").status_code == 200
    out = client.post("/console/logout", data={"csrf": csrf_of(client, "/console/")})
    assert out.url.path == "/console/login"
    client.cookies.clear()
    client.cookies.set(COOKIE, kept, path="/console")
    again = client.get("/console/", follow_redirects=False)
    assert again.status_code == 303 and again.headers["location"] == "/console/login"
    # logging in again opens a new session; the old cookie stays dead
    login(client, world.user_key)
    assert client.get("/console/").status_code == 200
    client.cookies.clear()
    client.cookies.set(COOKIE, kept, path="/console")
    assert client.get("/console/", follow_redirects=False).status_code == 303


def test_a_cookie_without_a_server_session_is_not_a_login(world: World) -> None:
    """A cookie sealed with the right key but naming no session (as every cookie before
    sessions were kept on the server) is sent to the login page."""
    box = SecretBox(world.client.services.settings.secret_key)
    forged = box.encrypt(orjson.dumps({"k": world.user_key, "t": 2_000_000_000}).decode())
    world.client.cookies.set(COOKIE, forged, path="/console")
    answer = world.client.get("/console/", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/login"
    unknown = box.encrypt(orjson.dumps({"k": world.user_key, "s": "made-up"}).decode())
    world.client.cookies.set(COOKIE, unknown, path="/console")
    assert world.client.get("/console/", follow_redirects=False).status_code == 303


def test_an_expired_session_is_not_a_login(world: World) -> None:
    from sqlalchemy import update

    from gateway.foundation.services import Services
    from gateway.foundation.store import tables as t
    from gateway.foundation.store.types import utcnow

    client = world.client
    login(client, world.user_key)
    assert client.get("/console/").status_code == 200

    async def expire(services: Services) -> None:
        async with services.database.transaction() as conn:
            await conn.execute(update(t.console_sessions).values(expires_at=utcnow()))

    client.run(expire)
    assert client.get("/console/", follow_redirects=False).status_code == 303
