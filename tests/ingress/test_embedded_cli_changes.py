"""Embedded backend: changes made by another process (`gateway admin set-secret`,
`gateway apply`) reach a running `gateway serve` without a restart."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.webhook_gateway.ingress.cache import ConfigCache
from gateway.webhook_gateway.ingress.change_poller import OVERLAP, ChangePoller
from testbed.procs import free_port
from tests.ingress.hooks import add_webhook, gateway_env, serve_gateway, stop_gateway
from tests.platform.factory_files.trees import minimal, webhook
from tests.support import GatewayClient, World, eventually
from tests.test_cli import admin, gateway

pytestmark = pytest.mark.slow


# The tests wait for a changed secret by posting with it until it passes: each post before the
# server's change poller (every POLL_S, 0.5 s) reloads the webhook fails authentication, and at
# the default failed-auth budget (10 a minute per webhook and address) a wait of ~0.4 s spent it,
# so the closing post with the old secret got 429 instead of 401. A budget no wait can spend.
AUTH_FAILURE_LIMIT = 1_000_000


@pytest.fixture
def server(sqlite_store: Callable[..., str]) -> Iterator[httpx.Client]:
    """`gateway serve` on the same SQLite file (migrated) and key the CLI helpers use."""
    env = gateway_env(
        database_url=sqlite_store("cli.db"),
        secret_key=base64.urlsafe_b64encode(b"c" * 32).decode(),
        log_level="warning",
        auth_failure_limit=str(AUTH_FAILURE_LIMIT),
    )
    port = free_port()
    proc = serve_gateway(env, port)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            yield client
    finally:
        stop_gateway(proc)


def github_post(client: httpx.Client, uid: str, secret: str, n: int) -> int:
    body = b'{"n": %d}' % n
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-Hub-Signature-256": signature, "X-GitHub-Delivery": f"gh-{n}-{time.time()}"}
    return client.post(f"/webhooks/w/{uid}", content=body, headers=headers).status_code


def test_set_secret_from_the_cli_reaches_the_server(tmp_path: Path, server: httpx.Client) -> None:
    demo = admin(tmp_path, "demo")
    made = server.post(
        f"/api/v1/factory/{demo['factory_uid']}/webhooks",
        headers={"Authorization": f"Bearer {demo['user_api_key']}"},
        json={
            "name": "gh",
            "auth_mode": "signature",
            "signature_scheme": "github",
            "secret_name": "demo-secret",
        },
    )
    assert made.status_code == 201, made.text
    uid = made.json()["uid"]
    assert github_post(server, uid, "demo-value", 1) == 202

    admin(
        tmp_path,
        "set-secret",
        "--team",
        demo["team_uid"],
        "--name",
        "demo-secret",
        "--value",
        "changed",
    )
    eventually(lambda: github_post(server, uid, "changed", 2) == 202, timeout=5)
    assert github_post(server, uid, "demo-value", 3) == 401


def test_apply_from_the_cli_reaches_the_server(tmp_path: Path, server: httpx.Client) -> None:
    demo = admin(tmp_path, "demo")
    tree = tmp_path / "defs"
    files = minimal("demo", {"webhooks/ci.yaml": webhook("demo-secret")})
    for path, text in files.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    applied = json.loads(
        gateway(tmp_path, "apply", str(tree), "--factory", demo["factory_uid"], "--json").stdout
    )
    (hook,) = applied["webhooks"]
    auth = {"Authorization": "Bearer demo-value"}  # the managed secret's value is the token
    assert server.post(f"/webhooks/w/{hook['uid']}", content=b"{}", headers=auth).status_code == 202

    (tree / "webhooks" / "ci.yaml").write_text(webhook("demo-secret", enabled="false"))
    gateway(tmp_path, "apply", str(tree), "--factory", demo["factory_uid"])
    eventually(
        lambda: (
            server.post(f"/webhooks/w/{hook['uid']}", content=b"{}", headers=auth).status_code
            == 404
        )
    )


def test_the_poller_starts_from_what_the_cache_preloaded(client: GatewayClient) -> None:
    """Webhooks changed shortly before start-up are in the preloaded cache already: the first
    poll reloads none of them (it reloaded every recently seeded webhook, seconds of CPU)."""
    world = World.create(client)
    hooks = [add_webhook(client, world) for _ in range(3)]

    async def run(services: Services) -> tuple[int, int]:
        cache = ConfigCache(services.database, services.secret_box)
        await cache.preload()
        poller = ChangePoller(services.database, cache)
        unchanged = await poller.poll_once(utcnow() - OVERLAP)
        async with services.database.transaction() as conn:
            await conn.execute(
                update(t.webhooks)
                .where(t.webhooks.c.uid == hooks[0].uid)
                .values(config_version=t.webhooks.c.config_version + 1, updated_at=utcnow())
            )
        return unchanged, await poller.poll_once(utcnow() - OVERLAP)

    unchanged, changed = client.run(run)
    assert (unchanged, changed) == (0, 1)


def test_a_late_poll_still_reloads_what_changed_before_its_overlap(client: GatewayClient) -> None:
    """A poll that comes late (a stalled event loop, or polls that failed on a locked store in
    between) reads from where the last one that succeeded began: a change made more than OVERLAP
    before it is still reloaded (a window of the last OVERLAP alone left it behind for good)."""
    world = World.create(client)
    hook = add_webhook(client, world)

    async def run(services: Services) -> tuple[int, int, int]:
        cache = ConfigCache(services.database, services.secret_box)
        await cache.preload()
        preloaded = cache.live(hook.uid)
        assert preloaded is not None
        poller = ChangePoller(services.database, cache)
        first = utcnow()
        unchanged = await poller.poll(first)
        async with services.database.transaction() as conn:
            await conn.execute(
                update(t.webhooks)
                .where(t.webhooks.c.uid == hook.uid)
                .values(
                    config_version=t.webhooks.c.config_version + 1,
                    updated_at=first + timedelta(seconds=1),
                )
            )
        late = first + timedelta(seconds=1) + 2 * OVERLAP
        reloaded = await poller.poll(late)
        live = cache.live(hook.uid)
        assert live is not None
        return unchanged, reloaded, live.version - preloaded.version

    unchanged, reloaded, newer_by = client.run(run)
    assert (unchanged, reloaded, newer_by) == (0, 1, 1)


def test_a_connection_made_and_rekeyed_from_the_cli_reaches_the_server(
    tmp_path: Path, server: httpx.Client
) -> None:
    demo = admin(tmp_path, "demo")
    team = demo["team_uid"]
    made = admin(tmp_path, "connect", "jira", "--team", team, "--secret-name", "demo-secret")

    def jira_post(secret: str, n: int) -> int:
        body = b'{"webhookEvent": "jira:issue_created", "n": %d}' % n
        signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        headers = {"X-Hub-Signature": signature, "X-Atlassian-Webhook-Identifier": f"j-{n}"}
        return server.post(f"/webhooks/p/{made['uid']}", content=body, headers=headers).status_code

    assert jira_post("demo-value", 1) == 202
    admin(tmp_path, "set-secret", "--team", team, "--name", "demo-secret", "--value", "changed")
    eventually(lambda: jira_post("changed", 2) == 202, timeout=5)
    assert jira_post("demo-value", 3) == 401
