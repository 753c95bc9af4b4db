"""Outcome traces, replay and filter backtests, through the API of a running app, on SQLite and
PostgreSQL, with the embedded backend and with Redis: replays take the backend's durable path and
the evaluator handles them like live deliveries."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from sqlalchemy import func, insert, select, update

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.settings import Settings
from gateway.platform.factories.foreman import set_foreman as assign_foreman
from gateway.webhook_gateway.automations.source_rows import stamp_micros
from gateway.webhook_gateway.deliveries import log as delivery_log
from tests.conftest import make_settings
from tests.support import GatewayClient, World, eventually


@pytest.fixture
def app(shape_settings: Callable[..., Settings]) -> Iterator[GatewayClient]:
    """Each supported shape: embedded on SQLite, Redis on PostgreSQL."""
    with GatewayClient.running(shape_settings()) as client:
        yield client


class Hook:
    """A token-mode webhook with two automations: `triage` (action opened), `closer` (closed)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.factory = f"/factory/{world.factory_uid}"
        made = world.api("POST", f"{self.factory}/webhooks", json={"name": "issues"}).json()
        self.uid, self.secret = made["uid"], made["secret"]
        self.base = f"{self.factory}/webhooks/{self.uid}"
        self.automations: dict[str, str] = {}
        for name, action in (("triage", "opened"), ("closer", "closed")):
            body = {"name": name, "prompt": f"Please {name}.", "triggers": [self.on(action)]}
            created = world.api("POST", f"{self.factory}/automations", json=body)
            assert created.status_code == 201, created.text
            self.automations[name] = created.json()["uid"]

    def on(self, action: str) -> dict[str, Any]:
        """A trigger on this webhook's deliveries whose `action` is `action`."""
        payload = {"action": [action]}
        return {
            "provider": "webhook",
            "event": "received",
            "filter": {"webhook_ids": [self.uid], "payload": payload},
        }

    def refilter(self, name: str, action: str) -> None:
        """Automation `name` now listens to `action` only."""
        path = f"{self.factory}/automations/{self.automations[name]}"
        answer = self.world.api("PATCH", path, json={"triggers": [self.on(action)]})
        assert answer.status_code == 200, answer.text

    def send(self, payload: dict[str, Any]) -> str:
        answer = self.world.client.post(
            f"/webhooks/w/{self.uid}",
            json=payload,
            headers={"Authorization": f"Bearer {self.secret}"},
        )
        assert answer.status_code == 202, answer.text
        delivery_id: str = answer.json()["delivery_id"]
        return delivery_id

    def evaluated(self, delivery_id: str) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            record: dict[str, Any] = self.world.api(
                "GET", f"{self.base}/deliveries/{delivery_id}"
            ).json()
            return record if record.get("evaluation") in ("evaluated", "failed") else None

        found: dict[str, Any] = eventually(probe)
        return found


def runs_of(client: GatewayClient, delivery_id: str) -> int:
    async def count(services: Services) -> int:
        async with services.database.read() as conn:
            query = (
                select(func.count()).select_from(t.runs).where(t.runs.c.delivery_id == delivery_id)
            )
            return int((await conn.execute(query)).scalar_one())

    return client.run(count)


def test_the_trace_names_the_automations_and_the_first_failing_path(app: GatewayClient) -> None:
    hook = Hook(World.create(app))
    opened = hook.evaluated(hook.send({"action": "opened", "n": 1}))
    assert opened["trace"]["outcome"] == "matched"
    by_uid = {a["automation_uid"]: a for a in opened["trace"]["automations"]}
    assert by_uid[hook.automations["triage"]]["matched"] is True
    closer = by_uid[hook.automations["closer"]]
    assert closer["matched"] is False
    assert closer["mismatch"] == '$.action: "opened" not in ["closed"]'
    assert closer["path"] == "$.action" and closer["filter_changed"] is False
    assert [r["automation_uid"] for r in opened["runs"]] == [hook.automations["triage"]]

    other = hook.evaluated(hook.send({"action": "edited"}))
    assert other["trace"]["outcome"] == "no_match" and other["runs"] == []
    assert {a["mismatch"] for a in other["trace"]["automations"]} == {
        '$.action: "edited" not in ["opened"]',
        '$.action: "edited" not in ["closed"]',
    }
    listed = hook.world.api("GET", f"{hook.base}/deliveries").json()["deliveries"]
    outcomes = {item["delivery_id"]: item["trace"]["outcome"] for item in listed}
    assert outcomes == {opened["delivery_id"]: "matched", other["delivery_id"]: "no_match"}

    # the filter changes later: the explanation says it is against today's filter
    hook.refilter("triage", "reopened")
    again = hook.world.api("GET", f"{hook.base}/deliveries/{other['delivery_id']}").json()
    triage = {a["automation_uid"]: a for a in again["trace"]["automations"]}[
        hook.automations["triage"]
    ]
    assert triage["filter_changed"] is True
    assert triage["mismatch"] == '$.action: "edited" not in ["reopened"]'


def test_traces_stored_in_earlier_forms_explain_the_same(app: GatewayClient) -> None:
    """A trace holds each automation's stamp (its updated_at in microseconds) as a number;
    traces written before held its digits as text, and before those the stored updated_at
    itself. Each form tells a changed filter from an unchanged one."""
    hook = Hook(World.create(app))
    delivery_id = hook.evaluated(hook.send({"action": "edited"}))["delivery_id"]
    d, a = t.deliveries, t.automations

    def stored_as(form: str) -> None:
        async def rewrite(services: Services) -> None:
            async with services.database.transaction() as conn:
                where = d.c.delivery_id == delivery_id
                raw = orjson.loads(
                    (await conn.execute(select(d.c.trace).where(where))).scalar_one()
                )
                times = {
                    r.uid: r.updated_at for r in await conn.execute(select(a.c.uid, a.c.updated_at))
                }
                raw["automations"] = [
                    [
                        uid,
                        hit,
                        str(stamp_micros(times[uid])) if form == "digits" else str(times[uid]),
                    ]
                    for uid, hit, _stamp in raw["automations"]
                ]
                await conn.execute(update(d).where(where).values(trace=orjson.dumps(raw)))

        app.run(rewrite)

    def stamps() -> list[object]:
        async def read(services: Services) -> list[object]:
            async with services.database.read() as conn:
                where = d.c.delivery_id == delivery_id
                raw = orjson.loads(
                    (await conn.execute(select(d.c.trace).where(where))).scalar_one()
                )
                return [stamp for _uid, _hit, stamp in raw["automations"]]

        return app.run(read)

    def changed() -> dict[str, bool]:
        got = hook.world.api("GET", f"{hook.base}/deliveries/{delivery_id}").json()
        return {e["automation_uid"]: e["filter_changed"] for e in got["trace"]["automations"]}

    unchanged = {uid: False for uid in hook.automations.values()}
    assert all(isinstance(stamp, int) for stamp in stamps())  # as written now: numbers
    assert changed() == unchanged
    for form in ("digits", "updated_at"):
        stored_as(form)
        assert changed() == unchanged, form
    hook.refilter("triage", "reopened")
    assert changed() == {**unchanged, hook.automations["triage"]: True}


def test_matches_without_a_foreman_are_a_failed_evaluation(app: GatewayClient) -> None:
    world = World.create(app)
    hook = Hook(world)

    async def no_foreman(services: Services) -> None:
        async with services.database.transaction() as conn:
            await assign_foreman(conn, world.factory_uid, None)

    app.run(no_foreman)
    record = hook.evaluated(hook.send({"action": "opened"}))
    assert record["evaluation"] == "failed" and record["runs"] == []
    assert record["trace"]["outcome"] == "no_foreman"


def test_a_replay_is_a_new_delivery_evaluated_once_against_todays_automations(
    app: GatewayClient,
) -> None:
    hook = Hook(World.create(app))
    first = hook.evaluated(hook.send({"action": "closed"}))
    assert len(first["runs"]) == 1
    # today the closer wants "reopened" instead: the replay is judged by that
    patched = hook.world.api(
        "PATCH",
        f"{hook.factory}/automations/{hook.automations['closer']}",
        json={
            "triggers": [
                {
                    "provider": "webhook",
                    "event": "received",
                    "filter": {"webhook_ids": [hook.uid], "payload": {"action": ["reopened"]}},
                }
            ]
        },
    )
    assert patched.status_code == 200, patched.text
    path = f"{hook.base}/deliveries/{first['delivery_id']}/replay"
    key = {"Authorization": hook.world.user["Authorization"], "Idempotency-Key": "k-1"}
    made = hook.world.api("POST", path, headers=key)
    assert made.status_code == 201, made.text
    again = hook.world.api("POST", path, headers=key)
    assert again.status_code == 200 and again.json() == made.json()
    replay_id = made.json()["delivery_id"]
    assert replay_id != first["delivery_id"] and made.json()["replay_of"] == first["delivery_id"]

    replay = hook.evaluated(replay_id)
    assert replay["replay_of"] == first["delivery_id"]
    assert replay["payload"] == {"action": "closed"}
    assert replay["trace"]["outcome"] == "no_match" and replay["runs"] == []
    original = hook.world.api("GET", f"{hook.base}/deliveries/{first['delivery_id']}").json()
    assert original["replays"] == [replay_id]
    # the original's explanation now uses the changed filter, and says so
    closer = {a["automation_uid"]: a for a in original["trace"]["automations"]}[
        hook.automations["closer"]
    ]
    assert closer["matched"] is True  # as evaluated then

    fresh = hook.world.api("POST", path)  # no key: another replay, which matches nothing
    assert fresh.status_code == 201
    hook.evaluated(fresh.json()["delivery_id"])
    assert runs_of(app, first["delivery_id"]) == 1
    assert runs_of(app, replay_id) == 0


def test_a_matching_replay_starts_exactly_one_run(app: GatewayClient) -> None:
    hook = Hook(World.create(app))
    first = hook.evaluated(hook.send({"action": "opened"}))
    made = hook.world.api("POST", f"{hook.base}/deliveries/{first['delivery_id']}/replay")
    replay = hook.evaluated(made.json()["delivery_id"])
    assert [r["automation_uid"] for r in replay["runs"]] == [hook.automations["triage"]]
    assert replay["runs"][0]["run_id"] != first["runs"][0]["run_id"]
    assert runs_of(app, replay["delivery_id"]) == 1
    listing = hook.world.api("GET", f"{hook.base}/replays").json()["replays"]
    assert [(r["delivery_id"], r["outcome"], r["runs"]) for r in listing] == [
        (replay["delivery_id"], "matched", 1)
    ]


def test_replays_respect_a_disabled_or_deleted_webhook(app: GatewayClient) -> None:
    hook = Hook(World.create(app))
    first = hook.evaluated(hook.send({"action": "opened"}))
    path = f"{hook.base}/deliveries/{first['delivery_id']}/replay"
    assert hook.world.api("PATCH", hook.base, json={"enabled": False}).status_code == 200
    refused = hook.world.api("POST", path)
    assert refused.status_code == 409 and refused.json()["code"] == "webhook_disabled"
    assert hook.world.api("DELETE", hook.base).status_code == 204
    assert hook.world.api("POST", path).status_code == 404
    assert (
        hook.world.api("POST", f"{hook.factory}/webhooks/nope/deliveries/x/replay").status_code
        == 404
    )


def test_replay_refusals_name_the_problem(app: GatewayClient) -> None:
    hook = Hook(World.create(app))
    first = hook.evaluated(hook.send({"action": "opened"}))
    second = hook.evaluated(hook.send({"action": "closed"}))
    missing = hook.world.api("POST", f"{hook.base}/deliveries/dlv_missing/replay")
    assert missing.status_code == 404
    key = {"Authorization": hook.world.user["Authorization"], "Idempotency-Key": "same"}
    assert (
        hook.world.api(
            "POST", f"{hook.base}/deliveries/{first['delivery_id']}/replay", headers=key
        ).status_code
        == 201
    )
    reused = hook.world.api(
        "POST", f"{hook.base}/deliveries/{second['delivery_id']}/replay", headers=key
    )
    assert reused.status_code == 409 and reused.json()["code"] == "idempotency_key_reused"
    stranger = hook.world.api(
        "POST", f"{hook.base}/deliveries/{first['delivery_id']}/replay", headers=hook.world.stranger
    )
    assert stranger.status_code in (403, 404)


def test_bulk_replay_is_bounded_and_keyed(app: GatewayClient) -> None:
    hook = Hook(World.create(app))
    since = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    sent = []
    for payload in (
        {"action": "opened", "i": 0},
        {"action": "opened", "i": 1},
        {"action": "opened", "i": 2},
        {"action": "edited"},
    ):
        sent.append(hook.send(payload))
        time.sleep(0.002)  # receipt times differ: same-millisecond deliveries go by id
    for delivery_id in sent:
        hook.evaluated(delivery_id)
    path = f"{hook.base}/deliveries/replay"
    key = {"Authorization": hook.world.user["Authorization"], "Idempotency-Key": "bulk-1"}
    body = {"since": since, "outcome": "matched", "limit": 2}
    result = hook.world.api("POST", path, json=body, headers=key)
    assert result.status_code == 200, result.text
    answer = result.json()
    assert [i["delivery_id"] for i in answer["items"]] == sent[:2]  # oldest first, bounded
    assert answer["counts"] == {"replayed": 2} and answer["retry_after"] is None
    repeated = hook.world.api("POST", path, json=body, headers=key).json()
    assert repeated["counts"] == {"replayed_before": 2}
    assert [i["replay_delivery_id"] for i in repeated["items"]] == [
        i["replay_delivery_id"] for i in answer["items"]
    ]
    for item in answer["items"]:
        assert len(hook.evaluated(item["replay_delivery_id"])["runs"]) == 1
    bad = hook.world.api("POST", path, json={"since": since, "limit": 101})
    assert bad.status_code == 400 and "limit" in bad.json()["detail"]


def test_filter_backtest_answers_like_the_evaluator(app: GatewayClient) -> None:
    hook = Hook(World.create(app))
    opened = hook.evaluated(hook.send({"action": "opened", "pr": {"state": "open"}}))
    closed = hook.evaluated(hook.send({"action": "closed"}))
    path = f"{hook.base}/filter-test"
    result = hook.world.api("POST", path, json={"payload": {"pr": {"state": ["open"]}}}).json()
    assert result["tested"] == 2 and result["matched"] == 1
    by_id = {d["delivery_id"]: d for d in result["deliveries"]}
    assert by_id[opened["delivery_id"]]["matched"] is True
    assert by_id[closed["delivery_id"]]["mismatch"] == "$.pr: missing, expected an object"
    # an automation's own filters: the same answer its live evaluation gave
    triage = hook.automations["triage"]
    tested = hook.world.api("POST", path, json={"automation_uid": triage, "last": 1}).json()
    assert [(d["delivery_id"], d["matched"]) for d in tested["deliveries"]] == [
        (closed["delivery_id"], False)
    ]
    for live in (opened, closed):
        entry = {a["automation_uid"]: a for a in live["trace"]["automations"]}[triage]
        again = hook.world.api("POST", path, json={"automation_uid": triage}).json()
        mine = {d["delivery_id"]: d for d in again["deliveries"]}[live["delivery_id"]]
        assert (mine["matched"], mine["mismatch"]) == (entry["matched"], entry["mismatch"])
    invalid = hook.world.api("POST", path, json={"payload": {"a": {"bogus": 1}}})
    assert invalid.status_code == 400 and "payload: $.a" in invalid.json()["detail"]
    both = hook.world.api("POST", path, json={"payload": {}, "automation_uid": triage})
    assert both.status_code == 400


def test_dry_run_backtests_an_automation_before_it_is_saved(app: GatewayClient) -> None:
    hook = Hook(World.create(app))
    hook.evaluated(hook.send({"action": "labeled"}))
    trigger = {
        "provider": "webhook",
        "event": "received",
        "filter": {"webhook_ids": [hook.uid], "payload": {"action": ["labeled"]}},
    }
    body = {"name": "labeler", "prompt": "Label it.", "triggers": [trigger]}
    path = f"{hook.factory}/automations/dry-run"
    answer = hook.world.api("POST", path, json=body)
    assert answer.status_code == 200, answer.text
    (tested,) = answer.json()["triggers"]
    assert tested["webhook_uid"] == hook.uid and tested["matched"] == 1
    names = [
        a["name"]
        for a in hook.world.api("GET", f"{hook.factory}/automations").json()["automations"]
    ]
    assert "labeler" not in names  # nothing saved
    trigger["filter"]["webhook_ids"] = ["wh_unknown"]
    assert hook.world.api("POST", path, json=body).status_code == 400


def test_replays_share_the_webhooks_delivery_rate(app: GatewayClient) -> None:
    hook = Hook(World.create(app))
    since = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    sent = [hook.send({"action": "edited", "i": i}) for i in range(57)]
    hook.evaluated(sent[-1])
    answer = hook.world.api(
        "POST", f"{hook.base}/deliveries/replay", json={"since": since, "limit": 5}
    ).json()
    assert [item["status"] for item in answer["items"]] == ["replayed"] * 3 + ["not_sent"] * 2
    assert answer["counts"] == {"replayed": 3, "not_sent": 2}
    assert 1 <= answer["retry_after"] <= 60
    one = hook.world.api("POST", f"{hook.base}/deliveries/{sent[0]}/replay")
    assert one.status_code == 429 and int(one.headers["retry-after"]) >= 1


def test_prune_drops_old_replay_links_of_pruned_deliveries_only(app: GatewayClient) -> None:
    mine = uuid.uuid4().hex[:12]
    old, recent = f"dlv_gone_old_{mine}", f"dlv_on_its_way_{mine}"

    async def prune(services: Services) -> set[str]:
        now = utcnow()
        r = t.delivery_replays
        async with services.database.transaction() as conn:
            for delivery_id, age in ((old, 8), (recent, 0)):
                await conn.execute(
                    insert(r).values(
                        delivery_id=delivery_id,
                        webhook_uid=f"wh_{mine}",
                        replay_of="dlv_first",
                        created_at=now - timedelta(days=age),
                    )
                )
            await delivery_log.prune(conn)
            found = await conn.execute(
                select(r.c.delivery_id).where(r.c.delivery_id.in_([old, recent]))
            )
            return set(found.scalars())

    assert app.run(prune) == {recent}


def test_an_api_only_process_replays_through_redis(
    database_url: str, redis_url: str, redis_prefix: str
) -> None:
    prefix = f"{redis_prefix}:{uuid.uuid4().hex}"
    everything = make_settings(database_url, redis_url, prefix=prefix)
    api_only = make_settings(database_url, redis_url, prefix=prefix, role="api")
    with GatewayClient.running(everything) as main, GatewayClient.running(api_only) as api:
        assert api.services.ingress is None and api.services.delivery_backend is not None
        hook = Hook(World.create(main))
        first = hook.evaluated(hook.send({"action": "opened"}))
        path = f"/api/v1{hook.base}/deliveries/{first['delivery_id']}/replay"
        made = api.post(path, headers=hook.world.user)
        assert made.status_code == 201, made.text
        replay = hook.evaluated(made.json()["delivery_id"])  # evaluated by the other process
        assert replay["replay_of"] == first["delivery_id"] and len(replay["runs"]) == 1
