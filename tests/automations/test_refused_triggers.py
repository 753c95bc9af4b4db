"""Triggers the evaluator could not use are refused when written, by one rule for files and the
API: an `@every` longer than a year (its slots fall past what a date holds: a 500 at apply
before), a filter list longer than the matchers take (stored, then never matched before), the
same webhook listed twice; and a backtest of such a filter is a 400, not a 500."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from tests.connections.provider_world import automation, connect, trigger
from tests.platform.factory_files.support import post
from tests.platform.factory_files.trees import automation as automation_file
from tests.platform.factory_files.trees import minimal
from tests.support import World

LABELS = [f"label-{i}" for i in range(101)]


def _diagnostics(response: Any) -> list[tuple[str, str, str]]:
    assert response.status_code == 422, response.text
    return [(d["code"], d["path"], d["message"]) for d in response.json()["diagnostics"]]


def _refused_in_files(world: World, triggers: str, code: str, words: str) -> None:
    tree = minimal("refusals", {"automations/bad/automation.md": automation_file(triggers)})
    for operation in ("plan", "apply"):
        found = _diagnostics(post(world, operation, tree))
        assert [c for c, _f, _m in found] == [code], found
        (_code, file, message) = found[0]
        assert file == "automations/bad/automation.md" and words in message, found


def _refused_by_api(world: World, triggers: list[dict[str, Any]], field: str, words: str) -> None:
    body = {"name": "bad", "prompt": "p", "triggers": triggers}
    for operation in ("", "/dry-run"):  # written, or tried without saving: one rule
        path = f"/factory/{world.factory_uid}/automations{operation}"
        answer = world.api("POST", path, json=body)
        assert answer.status_code == 400, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        detail = answer.json()["detail"]
        assert detail.startswith(field) and words in detail, detail


def test_an_every_longer_than_a_year_is_refused(world: World) -> None:
    for cron in ("@every 87600000h", "@every 8785h", "@every 9999999999999999h"):
        schedule = (
            f'  - provider: schedule\n    event: cron_fired\n    schedule:\n      cron: "{cron}"\n'
        )
        _refused_in_files(world, schedule, "FF_INVALID_SCHEDULE", "at most 8784h")
        raw = {"provider": "schedule", "event": "cron_fired", "schedule": {"cron": cron}}
        _refused_by_api(world, [raw], "triggers[0].schedule.cron", "at most 8784h")
    yearly = {"provider": "schedule", "event": "cron_fired", "schedule": {"cron": "@every 8784h"}}
    made = world.api(
        "POST",
        f"/factory/{world.factory_uid}/automations",
        json={"name": "yearly", "prompt": "p", "triggers": [yearly]},
    )
    assert made.status_code == 201, made.text


def test_a_filter_list_longer_than_the_matchers_take_is_refused(world: World) -> None:
    labels = "".join(f"        - {label}\n" for label in LABELS)
    issue = (
        "  - provider: github\n    event: issue_labeled\n    filter:\n"
        f"      repos: [acme/api]\n      labels:\n{labels}"
    )
    _refused_in_files(world, issue, "FF_INVALID_FILTER", "at most 100 values")
    raw = trigger("github", "issue_labeled", labels=LABELS)
    _refused_by_api(world, [raw], "triggers[0].filter.labels", "at most 100 values")
    _refused_by_api(
        world,
        [trigger("github", "issue_labeled", labels={"not_in": LABELS})],
        "triggers[0].filter.labels.not_in",
        "at most 100 values",
    )
    # 100 values, and 101 written of which 100 differ: what the matchers take
    for labels_ in (LABELS[:100], [*LABELS[:100], LABELS[0]]):
        automation(
            world, world.factory_uid, "hundred", trigger("github", "issue_labeled", labels=labels_)
        )


def test_a_webhook_listed_twice_in_one_trigger_is_refused(world: World) -> None:
    hook = world.api("POST", f"/factory/{world.factory_uid}/webhooks", json={"name": "h"}).json()
    uid = hook["uid"]
    _refused_by_api(
        world,
        [trigger("webhook", "received", webhook_ids=[uid, uid])],
        "triggers[0].filter.webhook_ids[1]",
        "listed twice",
    )
    _refused_by_api(
        world,
        [trigger("webhook", "received", webhook_ids={"in": [uid, uid]})],
        "triggers[0].filter.webhook_ids.in[1]",
        "listed twice",
    )
    twice = (
        "  - provider: webhook\n    event: received\n    filter:\n"
        f"      webhook_ids: [{uid}, {uid}]\n"
    )
    _refused_in_files(world, twice, "FF_INVALID_FILTER", "listed twice")
    other = world.api("POST", f"/factory/{world.factory_uid}/webhooks", json={"name": "o"})
    both = trigger("webhook", "received", webhook_ids=[uid, other.json()["uid"]])
    automation(world, world.factory_uid, "both", both)  # two different webhooks: accepted


def test_a_backtest_of_a_filter_the_matchers_refuse_is_a_400(world: World) -> None:
    github = connect(world, "github")
    path = f"/provider-connections/{github['uid']}/filter-test"
    answer = world.api(
        "POST", path, json={"trigger": trigger("github", "issue_labeled", labels=LABELS)}
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["detail"].startswith("trigger.filter.labels"), answer.text
    # an automation stored before the rule (the list written straight into its row)
    uid = automation(
        world, world.factory_uid, "old", trigger("github", "issue_labeled", labels=["a"])
    )
    stored = [
        {"provider": "github", "event": "issue_labeled", "filter": {"labels": {"in": LABELS}}}
    ]

    async def store(services: Services) -> None:
        async with services.database.transaction() as conn:
            await conn.execute(
                update(t.automations).where(t.automations.c.uid == uid).values(triggers=stored)
            )

    world.client.run(store)
    answer = world.api("POST", path, json={"automation_uid": uid})
    assert answer.status_code == 400, answer.text
    assert answer.json()["detail"].startswith("automation_uid"), answer.text
