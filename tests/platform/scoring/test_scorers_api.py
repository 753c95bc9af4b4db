"""Scorers (create, list) and manual scorer dispatch with every rule of spec 4.7."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from gateway.foundation.accounts import factories
from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.platform.runs.creation.new_runs import NewRun, insert_run
from gateway.platform.scoring import scorers
from gateway.platform.scoring.models import ScorerCreate
from tests.platform.runs.runs_support import advance, new_run
from tests.support import World

NIL = "00000000-0000-0000-0000-000000000000"


class Setup:
    """The world's factory with a started foreman run, a scorer for every agent, and helpers."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.base = f"/factory/{world.factory_uid}"
        self.scorer = self.create_scorer()["uid"]
        self.run = self.factory_run()

    def create_scorer(self, **body: Any) -> dict[str, Any]:
        response = self.world.api(
            "POST", f"{self.base}/scorers", json={"name": "Quality", "prompt": "Judge", **body}
        )
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    def factory_run(self, *, start: bool = True, factory_uid: str | None = None) -> str:
        at = f"/factory/{factory_uid or self.world.factory_uid}/runs"
        response = self.world.api("POST", at, json={"prompt": "Build it"})
        assert response.status_code == 201, response.text
        run_id: str = response.json()["run_id"]
        if start:
            advance(self.world, run_id, "claim", "start")
        return run_id

    def dispatch(self, run_ids: list[str], scorer: str | None = None, **kwargs: Any) -> Any:
        path = f"{self.base}/scorers/{scorer or self.scorer}/dispatch"
        return self.world.api("POST", path, json={"run_ids": run_ids}, **kwargs)

    def dispatch_run(self, scorer_uids: list[str], run: str | None = None, **kwargs: Any) -> Any:
        path = f"{self.base}/runs/{run or self.run}/scorer_dispatch"
        return self.world.api("POST", path, json={"scorer_uids": scorer_uids}, **kwargs)

    def jobs(self) -> list[Any]:
        async def go(services: Services) -> list[Any]:
            async with services.database.read() as conn:
                j = t.scoring_jobs  # the PostgreSQL store is shared by the session's tests
                query = (
                    select(j)
                    .where(j.c.factory_uid == self.world.factory_uid)
                    .order_by(j.c.created_at)
                )
                return list((await conn.execute(query)).all())

        return self.world.client.run(go)

    def domain_scorer(self, **fields: Any) -> str:
        """A scorer the API cannot make (benchmark-managed), through the domain."""

        async def go(services: Services) -> str:
            user = Principal(
                "user", self.world.user_uid, "u", None, frozenset({self.world.team_uid})
            )
            async with services.database.transaction() as conn:
                factory = await get_accessible_factory(conn, user, self.world.factory_uid)
                body = ScorerCreate(name="Bench", prompt="p")
                scorer = await scorers.create_scorer(conn, user, factory, body, **fields)
                return scorer.uid

        return self.world.client.run(go)

    def raw_run(self, **values: Any) -> str:
        """A run of the factory as the API does not make it (a scoring job run)."""

        async def go(services: Services) -> str:
            new = NewRun(
                prompt="score it",
                team_uid=self.world.team_uid,
                factory_uid=self.world.factory_uid,
                agent_uid=self.world.agent_uid,
                **values,
            )
            async with services.database.transaction() as conn:
                return str((await insert_run(conn, new)).run_id)

        run_id = self.world.client.run(go)
        advance(self.world, run_id, "claim", "start")
        return run_id


def _agent(world: World, **body: Any) -> dict[str, Any]:
    response = world.api("POST", "/agent/identities", json={"name": "Helper", **body})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _child_run(world: World, parent: str, agent_key: str) -> str:
    headers = {"Authorization": f"Bearer {agent_key}"}
    created = world.api(
        "POST", "/agent/runs", headers=headers, json={"prompt": "part", "parent_run_id": parent}
    )
    assert created.status_code == 200, created.text
    run_id: str = created.json()["run_id"]
    advance(world, run_id, "claim", "start")
    return run_id


def test_create_and_list_scorers(world: World) -> None:
    setup = Setup(world)
    helper = _agent(world)
    selected = setup.create_scorer(
        name="Style", scope_mode="selected_agents", agent_uids=[helper["uid"]], active=False
    )
    assert selected["agent_uids"] == [helper["uid"]] and selected["version"] == 1
    assert not selected["active"] and not selected["benchmark_managed"]
    listed = world.api("GET", f"{setup.base}/scorers", headers=world.agent)
    assert listed.status_code == 200
    assert [s["uid"] for s in listed.json()["scorers"]] == [setup.scorer, selected["uid"]]
    stranger_agent = _agent_of_stranger(world)
    for body, field in (
        ({"scope_mode": "selected_agents"}, "agent_uids"),
        ({"scope_mode": "selected_agents", "agent_uids": [stranger_agent]}, "agent_uids[0]"),
        ({"agent_uids": [helper["uid"]]}, "agent_uids"),
        ({"scope_mode": "some"}, "scope_mode"),
        ({"prompt": " "}, "prompt"),
    ):
        response = world.api(
            "POST", f"{setup.base}/scorers", json={"name": "n", "prompt": "p"} | body
        )
        assert response.status_code == 400 and response.json()["detail"].startswith(field), body


def _agent_of_stranger(world: World) -> str:
    response = world.api("POST", "/agent/identities", headers=world.stranger, json={"name": "S"})
    assert response.status_code == 201
    uid: str = response.json()["uid"]
    return uid


def test_scorer_access(world: World) -> None:
    base = f"/factory/{world.factory_uid}/scorers"
    body = {"name": "n", "prompt": "p"}
    assert world.api("POST", base, json=body, headers={}).status_code == 401
    assert world.api("POST", base, json=body, headers=world.agent).status_code == 403
    assert world.api("POST", base, json=body, headers=world.stranger).status_code == 403
    assert world.api("POST", "/factory/fac_nope/scorers", json=body).status_code == 404
    assert world.api("GET", base, headers={}).status_code == 401
    assert world.api("GET", base, headers=world.stranger).status_code == 403
    assert world.api("GET", "/factory/fac_nope/scorers").status_code == 404
    assert world.api("GET", "/factory/%00/scorers").status_code == 400


def test_dispatch_queues_one_job_per_run(world: World) -> None:
    setup = Setup(world)
    other = setup.factory_run()
    answer = setup.dispatch([setup.run, other])
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert [(r["run_id"], r["status"], r["error"]) for r in results] == [
        (setup.run, "queued", None),
        (other, "queued", None),
    ]
    jobs = setup.jobs()
    assert [(j.run_id, j.scorer_uid, j.status, j.trigger, j.scorer_version) for j in jobs] == [
        (setup.run, setup.scorer, "queued", "manual", 1),
        (other, setup.scorer, "queued", "manual", 1),
    ]
    assert [r["job_id"] for r in results] == [j.job_id for j in jobs]
    again = setup.dispatch([other.upper()]).json()["results"]  # any UUID spelling
    assert again[0]["status"] == "already_queued" and again[0]["job_id"] == jobs[1].job_id
    assert again[0]["error"] and len(setup.jobs()) == 2


def test_manual_dispatch_ignores_the_active_flag(world: World) -> None:
    setup = Setup(world)
    paused = setup.create_scorer(active=False)["uid"]
    answer = setup.dispatch_run([paused])
    assert answer.status_code == 200 and answer.json()["results"][0]["status"] == "queued"


def test_an_invalid_run_rejects_the_whole_request(world: World) -> None:
    setup = Setup(world)
    second_factory = _second_factory(world)
    helper = _agent(world)  # an agent of the team not working for the factory
    linked = _agent(world, factory_uid=world.factory_uid)
    stranger_run = new_run(world, headers=world.stranger)["run_id"]
    bad = {
        "not started": setup.factory_run(start=False),
        "other factory": setup.factory_run(factory_uid=second_factory),
        "own run": _started(world, new_run(world)["run_id"]),
        "stranger's": stranger_run,
        "unknown": "0192a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "non-factory agent": _child_run(world, setup.run, helper["api_key"]),
        "scoring job": setup.raw_run(source="SCORER"),
        "nil": NIL,
        "duplicate": setup.run,
    }
    for why, run_id in bad.items():
        response = setup.dispatch([setup.run, run_id])
        assert response.status_code == 400, (why, response.text)
        assert response.json()["detail"].startswith("run_ids[1]: "), why
    assert setup.jobs() == []  # nothing started for the valid first run
    for body in ({"run_ids": []}, {"run_ids": ["x"]}, {"run_ids": [setup.run] * 101}, {}):
        path = f"{setup.base}/scorers/{setup.scorer}/dispatch"
        response = world.api("POST", path, json=body)
        assert response.status_code == 400 and response.json()["detail"].startswith("run_ids")
    # an agent linked to the factory is a factory agent: its runs may be scored
    by_linked = _child_run(world, setup.run, linked["api_key"])
    assert setup.dispatch([by_linked]).status_code == 200


def test_scorers_must_fit_the_run(world: World) -> None:
    setup = Setup(world)
    helper = _agent(world, factory_uid=world.factory_uid)
    for_helper = setup.create_scorer(scope_mode="selected_agents", agent_uids=[helper["uid"]])
    benchmark = setup.domain_scorer(benchmark_managed=True)
    elsewhere = _scorer_of(world, _second_factory(world))
    for why, scorer in (
        ("other agent", for_helper["uid"]),
        ("benchmark", benchmark),
        ("other factory", elsewhere),
        ("unknown", "0192a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"),
        ("nil", NIL),
        ("duplicate", setup.scorer),
    ):
        response = setup.dispatch_run([setup.scorer, scorer])
        assert response.status_code == 400, (why, response.text)
        assert response.json()["detail"].startswith("scorer_uids[1]: "), why
    assert setup.jobs() == []
    by_helper = _child_run(world, setup.run, helper["api_key"])
    fits = setup.dispatch_run([for_helper["uid"], setup.scorer], run=by_helper)
    assert [r["status"] for r in fits.json()["results"]] == ["queued", "queued"]
    response = setup.dispatch([setup.run], scorer=benchmark)
    assert response.status_code == 400 and response.json()["detail"].startswith("scorer_uid:")
    response = setup.dispatch([setup.run], scorer=for_helper["uid"])
    assert response.status_code == 400 and response.json()["detail"].startswith("run_ids[0]:")


def test_dispatch_for_one_run_checks_the_run(world: World) -> None:
    setup = Setup(world)
    waiting = setup.factory_run(start=False)
    response = setup.dispatch_run([setup.scorer], run=waiting)
    assert response.status_code == 400 and response.json()["detail"].startswith("run_id: ")
    scoring = setup.raw_run(source="SCORER")
    assert setup.dispatch_run([setup.scorer], run=scoring).status_code == 400
    elsewhere = setup.factory_run(factory_uid=_second_factory(world))
    assert setup.dispatch_run([setup.scorer], run=elsewhere).status_code == 404
    assert setup.dispatch_run([setup.scorer], run="missing").status_code == 404
    hidden = new_run(world, headers=world.stranger)["run_id"]
    assert setup.dispatch_run([setup.scorer], run=hidden).status_code == 404
    for body in ({"scorer_uids": []}, {"scorer_uids": [setup.scorer] * 101}, {"x": 1}):
        path = f"{setup.base}/runs/{setup.run}/scorer_dispatch"
        assert world.api("POST", path, json=body).status_code == 400, body


def test_dispatch_needs_manage_access(world: World) -> None:
    setup = Setup(world)
    for send in (setup.dispatch, setup.dispatch_run):
        selection = [setup.run] if send == setup.dispatch else [setup.scorer]
        assert send(selection, headers={}).status_code == 401
        as_agent = send(selection, headers=world.agent)
        assert as_agent.status_code == 403 and "user credentials" in as_agent.json()["detail"]
        assert send(selection, headers=world.stranger).status_code == 403
    unknown_factory = f"/factory/fac_nope/scorers/{setup.scorer}/dispatch"
    assert world.api("POST", unknown_factory, json={"run_ids": [setup.run]}).status_code == 404
    path = f"/factory/fac_nope/runs/{setup.run}/scorer_dispatch"
    assert world.api("POST", path, json={"scorer_uids": [setup.scorer]}).status_code == 404
    missing = setup.dispatch([setup.run], scorer="0192a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
    assert missing.status_code == 404 and missing.json()["detail"].startswith("scorer_uid")
    assert setup.jobs() == []


def _started(world: World, run_id: str) -> str:
    advance(world, run_id, "claim", "start")
    return run_id


def _second_factory(world: World) -> str:
    async def go(services: Services) -> str:
        async with services.database.transaction() as conn:
            return await factories.create_factory(conn, world.team_uid, "F2", None, world.agent_uid)

    return world.client.run(go)


def _scorer_of(world: World, factory_uid: str) -> str:
    response = world.api(
        "POST", f"/factory/{factory_uid}/scorers", json={"name": "Other", "prompt": "p"}
    )
    assert response.status_code == 201
    uid: str = response.json()["uid"]
    return uid


def test_update_is_partial_bumps_the_version_and_replaces_the_scope(world: World) -> None:
    setup = Setup(world)
    helper = _agent(world)
    at = f"{setup.base}/scorers/{setup.scorer}"
    renamed = world.api("PATCH", at, json={"name": "Quality v2"})
    assert renamed.status_code == 200, renamed.text
    body = renamed.json()
    assert (body["name"], body["prompt"], body["version"]) == ("Quality v2", "Judge", 2)
    assert body["updated_at"] >= body["created_at"]

    scoped = world.api(
        "PATCH", at, json={"scope_mode": "selected_agents", "agent_uids": [helper["uid"]]}
    ).json()
    assert (scoped["scope_mode"], scoped["agent_uids"], scoped["version"]) == (
        "selected_agents",
        [helper["uid"]],
        3,
    )
    # the scope is replaced in full: back to every agent, the selection goes
    everyone = world.api("PATCH", at, json={"scope_mode": "all_agents"}).json()
    assert (everyone["scope_mode"], everyone["agent_uids"], everyone["version"]) == (
        "all_agents",
        [],
        4,
    )
    off = world.api("PATCH", at, json={"active": False, "self_improvement_enabled": True})
    assert off.json()["active"] is False and off.json()["self_improvement_enabled"] is True

    for change, field in (
        ({}, "body"),
        ({"factory_uid": "fac_other"}, "factory_uid"),
        ({"name": " "}, "name"),
        ({"scope_mode": "selected_agents"}, "agent_uids"),
        ({"agent_uids": [helper["uid"]]}, "agent_uids"),  # the current mode is all_agents
        ({"scope_mode": "selected_agents", "agent_uids": [helper["uid"], helper["uid"]]},
         "agent_uids[1]"),
    ):  # fmt: skip
        refused = world.api("PATCH", at, json=change)
        assert refused.status_code == 400, change
        assert field in refused.json()["detail"], (change, refused.json())
    assert world.api("GET", f"{setup.base}/scorers").json()["scorers"][0]["version"] == 5

    assert world.api("PATCH", at, json={"name": "x"}, headers=world.agent).status_code == 403
    assert world.api("PATCH", at, json={"name": "x"}, headers=world.stranger).status_code == 403
    missing = f"{setup.base}/scorers/00000000-0000-7000-8000-000000000000"
    assert world.api("PATCH", missing, json={"name": "x"}).status_code == 404


def test_delete_removes_the_scorer_and_its_jobs(world: World) -> None:
    setup = Setup(world)
    assert setup.dispatch([setup.run]).status_code == 200
    assert len(setup.jobs()) == 1
    at = f"{setup.base}/scorers/{setup.scorer}"
    assert world.api("DELETE", at, headers=world.agent).status_code == 403
    assert world.api("DELETE", at, headers=world.stranger).status_code == 403
    gone = world.api("DELETE", at)
    assert gone.status_code == 204 and gone.content == b""
    assert setup.jobs() == []
    assert world.api("GET", f"{setup.base}/scorers").json()["scorers"] == []
    assert world.api("DELETE", at).status_code == 404
    assert world.api("PATCH", at, json={"name": "x"}).status_code == 404
    assert setup.dispatch([setup.run]).status_code == 404
