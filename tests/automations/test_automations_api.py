"""Automation management API: trigger validation, filters, and deleted webhooks."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import World


def webhook(world: World, name: str = "hook") -> str:
    uid: str = world.api(
        "POST", f"/factory/{world.factory_uid}/webhooks", json={"name": name}
    ).json()["uid"]
    return uid


def trigger(webhook_uid: str, payload: Any = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"webhook_ids": [webhook_uid]}
    if payload is not None:
        spec["payload"] = payload
    return {"provider": "webhook", "event": "received", "filter": spec}


def create(world: World, **body: Any) -> Any:
    return world.api("POST", f"/factory/{world.factory_uid}/automations", json=body)


def test_create_get_list_patch_delete(world: World) -> None:
    hook = webhook(world)
    made = create(
        world, name="PRs", prompt="Review it", triggers=[trigger(hook, {"action": ["opened"]})]
    )
    assert made.status_code == 201
    body = made.json()
    assert body["enabled"] is True and body["webhooks_deleted"] == []
    assert body["triggers"][0]["filter"]["payload"] == {"action": ["opened"]}
    path = f"/factory/{world.factory_uid}/automations/{body['uid']}"
    assert world.api("GET", path).json()["name"] == "PRs"
    assert [
        a["uid"]
        for a in world.api("GET", f"/factory/{world.factory_uid}/automations").json()["automations"]
    ] == [body["uid"]]
    patched = world.api("PATCH", path, json={"enabled": False, "prompt": "Again"})
    assert patched.status_code == 200 and patched.json()["enabled"] is False
    assert world.api("DELETE", path).status_code == 204
    assert world.api("GET", path).status_code == 404


def test_several_triggers_one_per_webhook(world: World) -> None:
    a, b = webhook(world, "a"), webhook(world, "b")
    made = create(
        world, name="both", prompt="p", triggers=[trigger(a), trigger(b, {"x": {"exists": True}})]
    )
    assert made.status_code == 201 and len(made.json()["triggers"]) == 2


def test_deleted_webhook_keeps_automation_visible(world: World) -> None:
    hook = webhook(world)
    uid = create(world, name="n", prompt="p", triggers=[trigger(hook)]).json()["uid"]
    world.api("DELETE", f"/factory/{world.factory_uid}/webhooks/{hook}")
    shown = world.api("GET", f"/factory/{world.factory_uid}/automations/{uid}")
    assert shown.status_code == 200 and shown.json()["webhooks_deleted"] == [hook]


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda h: {"prompt": "p", "triggers": [trigger(h)]}, "name"),
        (lambda h: {"name": "n", "triggers": [trigger(h)]}, "prompt"),
        (lambda h: {"name": "n", "prompt": "p"}, "triggers"),
        (lambda h: {"name": "n", "prompt": "p", "triggers": []}, "triggers"),
        (
            lambda h: {
                "name": "n",
                "prompt": "p",
                "triggers": [{**trigger(h), "provider": "cron"}],
            },
            "triggers[0].provider",
        ),
        (
            lambda h: {"name": "n", "prompt": "p", "triggers": [{**trigger(h), "event": "sent"}]},
            "triggers[0].event",
        ),
        (
            lambda h: {
                "name": "n",
                "prompt": "p",
                "triggers": [
                    {
                        "provider": "webhook",
                        "event": "received",
                        "filter": {"webhook_ids": {"in": [h], "not_in": ["wh_" + "0" * 32]}},
                    }
                ],
            },
            "triggers[0].filter.webhook_ids.not_in",
        ),
        (
            lambda h: {"name": "n", "prompt": "p", "triggers": [trigger("wh_nope")]},
            "triggers[0].filter.webhook_ids",
        ),
        (
            lambda h: {"name": "n", "prompt": "p", "triggers": [trigger(h, {"action": "opened"})]},
            "triggers[0].filter.payload: $.action",
        ),
        (
            lambda h: {"name": "n", "prompt": "p", "enabled": "yes", "triggers": [trigger(h)]},
            "enabled",
        ),
        (lambda h: {"name": "n", "prompt": "p", "triggers": [trigger(h)], "colour": 1}, "colour"),
    ],
)
def test_invalid_bodies_name_the_field(world: World, make: Any, field: str) -> None:
    response = create(world, **make(webhook(world)))
    assert response.status_code == 400
    assert response.json()["detail"].startswith(field), response.json()["detail"]


def test_filter_errors_give_the_json_path(world: World) -> None:
    hook = webhook(world)
    bad = {"pull_request": {"labels": {"in": ["a", {"x": 1}]}}}
    detail = create(world, name="n", prompt="p", triggers=[trigger(hook, bad)]).json()["detail"]
    assert "$.pull_request.labels.in[1]" in detail


def test_webhook_of_another_factory_is_rejected(world: World) -> None:
    from gateway.foundation.accounts import factories

    async def other(services):  # type: ignore[no-untyped-def]
        async with services.database.transaction() as conn:
            return await factories.create_factory(
                conn, world.team_uid, "Other", None, world.agent_uid
            )

    other_factory = world.client.run(other)
    foreign = world.api("POST", f"/factory/{other_factory}/webhooks", json={"name": "x"}).json()[
        "uid"
    ]
    response = create(world, name="n", prompt="p", triggers=[trigger(foreign)])
    assert response.status_code == 400
    assert response.json()["detail"].startswith("triggers[0].filter.webhook_ids")


def test_access_rules(world: World) -> None:
    path = f"/factory/{world.factory_uid}/automations"
    assert world.api("GET", path, headers={}).status_code == 401
    assert world.api("GET", path, headers=world.stranger).status_code == 403
    assert world.api("GET", "/factory/fac_nope/automations").status_code == 404
    assert world.api("GET", f"{path}/auto_nope").status_code == 404


def trigger_rows(world: World, automation_uid: str) -> list[Any]:
    from sqlalchemy import select

    from gateway.foundation.store import tables as t

    async def run(services):  # type: ignore[no-untyped-def]
        async with services.database.read() as conn:
            query = (
                select(t.automation_triggers)
                .where(t.automation_triggers.c.automation_uid == automation_uid)
                .order_by(t.automation_triggers.c.position)
            )
            return list(await conn.execute(query))

    rows: list[Any] = world.client.run(run)
    return rows


def test_patch_replaces_the_trigger_index_and_bad_patches_change_nothing(world: World) -> None:
    first, second = webhook(world, "a"), webhook(world, "b")
    uid = create(world, name="n", prompt="p", triggers=[trigger(first)]).json()["uid"]
    assert [(r.position, r.webhook_uid) for r in trigger_rows(world, uid)] == [(0, first)]
    path = f"/factory/{world.factory_uid}/automations/{uid}"
    both = [trigger(second), trigger(first)]
    patched = world.api("PATCH", path, json={"name": "renamed", "triggers": both})
    assert patched.status_code == 200 and patched.json()["triggers"] == both
    assert [r.webhook_uid for r in trigger_rows(world, uid)] == [second, first]
    assert all(r.payload_filter is None for r in trigger_rows(world, uid))
    for body, field in [
        ({"triggers": []}, "triggers"),
        ({"triggers": [trigger("wh_nope")]}, "triggers[0].filter.webhook_ids"),
        ({"enabled": None}, "enabled"),
        ({"prompt": " "}, "prompt"),
        ({"uid": "x"}, "uid"),
    ]:
        response = world.api("PATCH", path, json=body)
        assert response.status_code == 400, body
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["detail"].startswith(field), response.json()["detail"]
    shown = world.api("GET", path).json()
    assert shown["name"] == "renamed" and shown["triggers"] == both
    assert world.api("DELETE", path).status_code == 204
    assert trigger_rows(world, uid) == []


def test_trigger_shape_limits(world: World) -> None:
    hook = webhook(world)
    for triggers, field in [
        ([trigger(hook)] * 21, "triggers"),
        (["webhook"], "triggers[0]"),
        ([{**trigger(hook), "extra": 1}], "triggers[0].extra"),
        ([{**trigger(hook), "filter": {"webhook_ids": hook}}], "triggers[0].filter.webhook_ids"),
        ([trigger(hook), {**trigger(hook), "filter": None}], "triggers[1].filter"),
    ]:
        response = create(world, name="n", prompt="p", triggers=triggers)
        assert response.status_code == 400, triggers
        assert response.json()["detail"].startswith(field), response.json()["detail"]
    assert create(world, name="n", prompt="p", triggers=[trigger(hook)] * 20).status_code == 201


def test_every_method_checks_credentials_and_factory_access(world: World) -> None:
    hook = webhook(world)
    uid = create(world, name="n", prompt="p", triggers=[trigger(hook)]).json()["uid"]
    base = f"/factory/{world.factory_uid}/automations"
    body = {"name": "n", "prompt": "p", "triggers": [trigger(hook)]}
    for method, path in [
        ("POST", base),
        ("GET", f"{base}/{uid}"),
        ("PATCH", f"{base}/{uid}"),
        ("DELETE", f"{base}/{uid}"),
    ]:
        assert world.api(method, path, headers={}, json=body).status_code == 401
        assert world.api(method, path, headers=world.stranger, json=body).status_code == 403
        missing = path.replace(world.factory_uid, "fac_nope")
        assert world.api(method, missing, json=body).status_code == 404
    assert world.api("PATCH", f"{base}/auto_nope", json={"name": "x"}).status_code == 404
    assert world.api("DELETE", f"{base}/auto_nope").status_code == 404
    assert world.api("GET", f"{base}/{uid}", headers=world.agent).status_code == 200


def test_a_trigger_may_name_several_webhooks(world: World) -> None:
    """Each once: a webhook named twice is refused (tests/automations/test_refused_triggers)."""
    a, b = webhook(world, "a"), webhook(world, "b")
    made = create(
        world,
        name="n",
        prompt="p",
        triggers=[{"provider": "webhook", "event": "received", "filter": {"webhook_ids": [b, a]}}],
    )
    assert made.status_code == 201, made.json()
    # stored canonical: sorted; one index row per webhook
    assert made.json()["triggers"][0]["filter"]["webhook_ids"] == sorted([a, b])
    assert sorted(r.webhook_uid for r in trigger_rows(world, made.json()["uid"])) == sorted([a, b])


PROVIDER_TRIGGERS: list[dict[str, Any]] = [
    {
        "provider": "github",
        "event": "pull_request_opened",
        "filter": {"repos": ["acme/api"], "labels": {"not_in": ["wip"]}, "pr_numbers": [7]},
    },
    {"provider": "slack", "event": "reaction_added", "filter": {"channels": ["intake"]}},
    {"provider": "linear", "event": "issue_created", "filter": {"teams": ["Platform"]}},
    {
        "provider": "schedule",
        "event": "cron_fired",
        "schedule": {"name": "nightly", "cron": "0 2 * * *"},
    },
    {"provider": "factory", "event": "work_item_stage_changed", "filter": {"stages": ["DONE"]}},
    {
        "provider": "teams",
        "event": "app_mention",
        "filter": {
            "team_ids": ["0b0e1c7e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"],
            "channel_ids": ["19:abc@thread.tacv2"],
        },
    },
]


def test_every_trigger_kind_is_accepted_and_shown_as_written(world: World) -> None:
    made = create(world, name="all", prompt="p", triggers=PROVIDER_TRIGGERS)
    assert made.status_code == 201, made.json()
    assert made.json()["triggers"] == PROVIDER_TRIGGERS
    shown = world.api("GET", f"/factory/{world.factory_uid}/automations/{made.json()['uid']}")
    assert shown.json()["triggers"] == PROVIDER_TRIGGERS
    assert trigger_rows(world, made.json()["uid"]) == []  # nothing for the webhook index


def test_aliases_are_rewritten_and_stored_canonical(world: World) -> None:
    made = create(
        world,
        name="n",
        prompt="p",
        triggers=[
            {
                "provider": "github",
                "event": "pull_request_opened",
                "filter": {"baseBranches": ["main"], "repos": ["b/b", "a/a"]},
            }
        ],
    )
    assert made.status_code == 201, made.json()
    assert made.json()["triggers"][0]["filter"] == {
        "base_branches": ["main"],
        "repos": ["a/a", "b/b"],
    }

    from sqlalchemy import select

    from gateway.foundation.store import tables as t

    async def stored(services):  # type: ignore[no-untyped-def]
        async with services.database.read() as conn:
            query = select(t.automations.c.triggers).where(
                t.automations.c.uid == made.json()["uid"]
            )
            return (await conn.execute(query)).scalar_one()

    assert world.client.run(stored) == [
        {
            "provider": "github",
            "event": "pull_request_opened",
            "filter": {"base_branches": {"in": ["main"]}, "repos": {"in": ["a/a", "b/b"]}},
        }
    ]


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"provider": "github", "event": "pr_opened"}, "triggers[0].event"),
        ({"provider": "azure", "event": "push"}, "triggers[0].provider"),
        (
            {"provider": "github", "event": "push", "filter": {"labels": ["x"]}},
            "triggers[0].filter.labels",
        ),
        (
            {"provider": "github", "event": "pull_request_opened", "filter": {"pr_numbers": ["7"]}},
            "triggers[0].filter.pr_numbers[0]",
        ),
        (
            {
                "provider": "github",
                "event": "push",
                "filter": {"repos": ["a/b"]},
                "schedule": {"cron": "* * * * *"},
            },
            "triggers[0].schedule",
        ),
        ({"provider": "schedule", "event": "cron_fired"}, "triggers[0]"),
        (
            {"provider": "schedule", "event": "cron_fired", "schedule": {"cron": "0 0 31 2 *"}},
            "triggers[0].schedule.cron",
        ),
        (
            {
                "provider": "slack",
                "event": "app_mention",
                "filter": {"channels": ["a"], "channel_ids": ["C1"]},
            },
            "triggers[0].filter.channels",
        ),
        (
            {
                "provider": "schedule",
                "event": "cron_fired",
                "filter": {"schedule_ids": ["sch_nope"]},
            },
            "triggers[0].filter.schedule_ids[0]",
        ),
    ],
)
def test_invalid_provider_triggers_name_the_field(world: World, bad: Any, field: str) -> None:
    response = create(world, name="n", prompt="p", triggers=[bad])
    assert response.status_code == 400, response.json()
    assert response.json()["detail"].startswith(field), response.json()["detail"]
