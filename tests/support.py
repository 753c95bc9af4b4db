"""Test helpers: a running app behind Starlette's TestClient, and a bootstrapped world."""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from starlette.testclient import TestClient
from starlette.types import ASGIApp

from gateway.composition.app import create_app
from gateway.composition.cli import main
from gateway.foundation.accounts import factories, identities
from gateway.foundation.services import Services
from gateway.kernel.settings import Settings
from tests.one_call_transport import OneCallTransport

T = TypeVar("T")


class GatewayClient(TestClient):
    """TestClient that can also run coroutines against the app's own services, and hands each
    request to the app in one call (`OneCallTransport`)."""

    def __init__(
        self,
        app: ASGIApp,
        base_url: str = "http://testserver",
        client: tuple[str, int] = ("testclient", 50000),
    ) -> None:
        super().__init__(app, base_url, raise_server_exceptions=False, client=client)
        self._transport = OneCallTransport(self, client)

    @classmethod
    @contextmanager
    def running(
        cls, settings: Settings, *, peer: tuple[str, int] = ("testclient", 50000)
    ) -> Iterator[GatewayClient]:
        """The app of `settings` in a TestClient whose requests come from `peer`."""
        with cls(create_app(settings), client=peer) as client:
            yield client

    @property
    def services(self) -> Services:
        services: Services = self.app_state["services"]  # the lifespan state
        return services

    def run(self, fn: Callable[[Services], Awaitable[T]]) -> T:
        assert self.portal is not None
        return self.portal.call(fn, self.services)


@dataclass
class World:
    """A team with a user, an agent (the foreman) and a factory, plus a stranger in another team."""

    client: GatewayClient
    team_uid: str
    user_uid: str
    user_key: str
    agent_uid: str
    agent_key: str
    factory_uid: str
    other_team_uid: str
    stranger_key: str

    @classmethod
    def create(cls, client: GatewayClient, *, email: str | None = None) -> World:
        async def build(services: Services) -> World:
            import secrets

            async with services.database.transaction() as conn:
                team = await identities.create_team(conn, "Team A")
                user, user_key = await identities.create_user(
                    conn, team, email or f"u{secrets.token_hex(4)}@example.com"
                )
                agent, agent_key = await identities.create_agent(conn, team, "Foreman")
                factory = await factories.create_factory(conn, team, "Factory A", "fa", agent)
                other = await identities.create_team(conn, "Team B")
                _, stranger_key = await identities.create_user(
                    conn, other, f"s{secrets.token_hex(4)}@example.com"
                )
            return cls(client, team, user, user_key, agent, agent_key, factory, other, stranger_key)

        return client.run(build)

    @property
    def user(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.user_key}"}

    @property
    def agent(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.agent_key}"}

    @property
    def stranger(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.stranger_key}"}

    def api(
        self, method: str, path: str, *, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> Any:
        return self.client.request(
            method, f"/api/v1{path}", headers=self.user if headers is None else headers, **kwargs
        )


MAX_SLOWNESS = 8.0


def slowness() -> float:
    """How many times slower than on a quiet machine a test may find things now: the 1-minute
    load average per core (1 when the host is not busier than its cores, at most MAX_SLOWNESS),
    times TEST_TIME_SCALE when set (a slow runner). Deadlines that hold on a loaded host."""
    try:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        load = 1.0
    return min(max(load, 1.0), MAX_SLOWNESS) * float(os.environ.get("TEST_TIME_SCALE", "1"))


def scaled(seconds: float) -> float:
    """A deadline of `seconds` on a quiet machine, stretched by the host's current `slowness`."""
    return seconds * slowness()


def eventually(probe: Callable[[], Any], timeout: float = 20.0) -> Any:
    """The first truthy value `probe` returns, polling until `timeout` seconds (on a quiet
    machine: `scaled` by the host's load) have passed."""
    deadline = time.monotonic() + scaled(timeout)
    pause = 0.005  # most conditions hold within milliseconds: look again soon, then less often
    while True:
        value = probe()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


CLI_SECRET_KEY = base64.urlsafe_b64encode(b"c" * 32).decode()


@dataclass
class Cli:
    """`gateway ...` run in this process (`gateway.composition.cli.main`, as `python -m gateway`
    calls it) on a migrated SQLite store, cli.db in the test's directory: the `cli` fixture."""

    capsys: pytest.CaptureFixture[str]
    store: Path

    def run(self, *args: str) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) of one command."""
        try:
            code = main(list(args))
        except SystemExit as exit:  # argparse: --help, --version, usage errors
            code = int(exit.code or 0)
        out, err = self.capsys.readouterr()
        return code, out, err

    def admin(self, *args: str) -> dict[str, Any]:
        return self.json("admin", *args)

    def json(self, *args: str) -> dict[str, Any]:
        """The one JSON object a command that succeeds prints."""
        code, out, err = self.run(*args)
        assert code == 0, err
        lines = out.strip().splitlines()
        assert len(lines) == 1, out
        value: dict[str, Any] = json.loads(lines[0])
        return value
