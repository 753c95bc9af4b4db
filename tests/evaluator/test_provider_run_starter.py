"""RunStarter with provider deliveries, on SQLite and PostgreSQL: the outcomes beside a match
(connection gone, no trigger event, no foreman), configuration changes taken in, a delivery
twice in a batch, and the compiled triggers reused while nothing changes."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import select, update

from gateway.foundation.accounts import factories
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.platform.run_start import PLATFORM
from gateway.webhook_gateway.evaluator.delivery_runs import AcceptedDelivery, RunStarter
from tests.connections.provider_world import automation, connect, set_repositories, trigger
from tests.evaluator.test_runs_automation_starter import evaluate
from tests.support import World

REPO = {"full_name": "acme/api"}


def _issue(action: str, label: str = "agent") -> bytes:
    body = {"action": action, "issue": {"labels": [{"name": label}], "user": {"login": "ana"}}}
    return orjson.dumps(body | {"label": {"name": label}, "repository": REPO})


RUN = secrets.token_hex(4)  # delivery ids of this run (the PostgreSQL database is shared)


def _delivery(connection_uid: str, delivery_id: str, payload: bytes) -> AcceptedDelivery:
    headers = b"content-type: application/json\r\nx-github-event: issues"
    return AcceptedDelivery(
        f"{delivery_id}-{RUN}", connection_uid, datetime.now(UTC), payload, headers
    )


def _trace(client: Any, delivery_id: str) -> tuple[dict[str, Any], str]:
    async def read(services: Services) -> Any:
        d = t.deliveries
        query = select(d.c.trace, d.c.evaluation).where(d.c.delivery_id == f"{delivery_id}-{RUN}")
        async with services.database.read() as conn:
            return (await conn.execute(query)).first()

    row = client.run(read)
    return orjson.loads(row.trace), row.evaluation


def test_outcomes_beside_a_match(world: World) -> None:
    gw = world.client
    set_repositories(gw, world.factory_uid, "acme/api")
    wanted = automation(
        world, world.factory_uid, "agent", trigger("github", "issue_labeled", labels=["agent"])
    )
    live = connect(world, "github")
    gone = connect(world, "github")
    assert world.api("PATCH", f"/provider-connections/{gone['uid']}", json={"enabled": False})
    starter = RunStarter(PLATFORM)

    async def run(services: Services) -> Any:
        return await evaluate(
            services,
            starter,
            [
                _delivery(live["uid"], "d-match", _issue("labeled")),
                _delivery(live["uid"], "d-match", _issue("labeled")),  # twice in one batch
                _delivery(live["uid"], "d-closed", _issue("closed")),
                _delivery(live["uid"], "d-other", _issue("labeled", "bug")),
                _delivery(gone["uid"], "d-gone", _issue("labeled")),
            ],
        )

    refs = {key.removesuffix(f"-{RUN}"): found for key, found in gw.run(run).items()}
    assert [r.automation_uid for r in refs["d-match"]] == [wanted]
    assert not refs.get("d-closed") and not refs.get("d-other") and not refs.get("d-gone")
    outcomes = {
        d: _trace(gw, d)[0]["outcome"] for d in ("d-match", "d-closed", "d-other", "d-gone")
    }
    assert outcomes == {
        "d-match": "matched",
        "d-closed": "no_events",
        "d-other": "no_match",
        "d-gone": "connection_not_live",
    }
    matched, evaluation = _trace(gw, "d-match")
    assert evaluation == "evaluated"
    assert matched["events"] == ["issue_labeled"] and matched["provider"] == "github"
    assert [(uid, hit) for uid, hit, _stamp in matched["automations"]] == [(wanted, True)]


def test_no_foreman_fails_the_evaluation(world: World) -> None:
    gw = world.client

    async def headless(services: Services) -> str:
        async with services.database.transaction() as conn:
            return await factories.create_factory(conn, world.team_uid, "Headless", None, None)

    factory = gw.run(headless)
    set_repositories(gw, factory, "acme/api")
    automation(world, factory, "agent", trigger("github", "issue_labeled"))
    github = connect(world, "github")
    starter = RunStarter(PLATFORM)

    async def run(services: Services) -> Any:
        return await evaluate(
            services, starter, [_delivery(github["uid"], "d-1", _issue("labeled"))]
        )

    assert not gw.run(run)
    trace, evaluation = _trace(gw, "d-1")
    assert (trace["outcome"], evaluation) == ("no_foreman", "failed")

    async def notified(services: Services) -> list[str]:
        n = t.inbox_notifications
        async with services.database.read() as conn:
            query = select(n.c.detail).where(n.c.factory_uid == factory)
            return list((await conn.execute(query)).scalars())

    (detail,) = gw.run(notified)
    assert f"d-1-{RUN}" in detail and "foreman" in detail


def test_changes_are_taken_in_and_compilations_reused(world: World) -> None:
    gw = world.client
    set_repositories(gw, world.factory_uid, "acme/api")
    uid = automation(
        world, world.factory_uid, "agent", trigger("github", "issue_labeled", labels=["agent"])
    )
    github = connect(world, "github")
    starter = RunStarter(PLATFORM)

    def evaluate_one(delivery_id: str, label: str) -> list[str]:
        async def run(services: Services) -> Any:
            found = await evaluate(
                services, starter, [_delivery(github["uid"], delivery_id, _issue("labeled", label))]
            )
            return [r.automation_uid for r in found.get(f"{delivery_id}-{RUN}", [])]

        result: list[str] = gw.run(run)
        return result

    assert evaluate_one("chg-1", "agent") == [uid]
    compiled = starter.compilations
    assert evaluate_one("chg-2", "agent") == [uid]
    assert starter.compilations == compiled  # nothing changed: nothing compiled again
    changed = world.api(
        "PATCH",
        f"/factory/{world.factory_uid}/automations/{uid}",
        json={"triggers": [trigger("github", "issue_labeled", labels=["bug"])]},
    )
    assert changed.status_code == 200
    assert evaluate_one("chg-3", "agent") == []
    assert evaluate_one("chg-4", "bug") == [uid]
    # a factory that stops listing the repository is no longer reached
    set_repositories(gw, world.factory_uid, "acme/web")
    assert evaluate_one("chg-5", "bug") == []

    async def disable(services: Services) -> None:
        a = t.automations
        async with services.database.transaction() as conn:
            await conn.execute(update(a).where(a.c.uid == uid).values(enabled=False))

    set_repositories(gw, world.factory_uid, "acme/api")
    gw.run(disable)
    assert evaluate_one("chg-6", "bug") == []
