"""Plan and apply through the API: webhook files and the secrets they read, runs started by file
automations, references only the server resolves, resources the API made, who may apply, and a
tree posted from a repository root; on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
from typing import Any

from tests.platform.factory_files.support import applied, definition, post, set_secrets
from tests.platform.factory_files.trees import (
    GITHUB_PUSH,
    automation,
    minimal,
    webhook,
    webhook_trigger,
)
from tests.platform.runners.test_runner_api import Runner
from tests.support import World, eventually

STRIPE_SECRET = "whsec_" + base64.b64encode(b"s" * 24).decode()


def _diagnostics(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 422, response.json()
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "invalid_factory_tree"
    diagnostics: list[dict[str, Any]] = body["diagnostics"]
    return diagnostics


def test_a_file_webhook_reads_its_secret_at_apply_and_never_gets_one_generated(
    world: World,
) -> None:
    set_secrets(world, {"hook-token": "first-token"})
    tree = minimal("hooks", {"webhooks/inbox.yaml": webhook("hook-token")})
    first = applied(world, tree)
    (hook,) = first["webhooks"]
    assert hook["name"] == "inbox" and hook["uid"].startswith("wh_")
    assert hook["ingress_url"] == f"https://hooks.example.test/webhooks/w/{hook['uid']}"
    shown = world.api("GET", f"/factory/{first['factory_uid']}/webhooks/{hook['uid']}").json()
    assert "secret" not in shown and shown["secret_name"] == "hook-token"

    def deliver(token: str) -> int:
        path = f"/webhooks/w/{hook['uid']}"
        headers = {"Authorization": f"Bearer {token}"}
        status: int = world.client.post(path, content=b"{}", headers=headers).status_code
        return status

    assert deliver("first-token") == 202
    set_secrets(world, {"hook-token": "second-token"})  # rotated: kept until applied again
    assert deliver("first-token") == 202 and deliver("second-token") == 401
    plan = post(world, "plan", tree).json()["changes"]
    assert plan == [
        {"kind": "webhook", "name": "inbox", "action": "update", "fields": ["secret_value"]}
    ]
    assert applied(world, tree)["webhooks"] == [hook]  # the same UID
    eventually(lambda: deliver("second-token") == 202)
    assert deliver("first-token") == 401
    assert post(world, "plan", tree).json()["changes"] == []


def test_webhook_settings_change_in_place_and_deleting_the_file_deletes_it(world: World) -> None:
    set_secrets(world, {"hook-token": "t0ken", "stripe-signing": STRIPE_SECRET})
    tree = minimal("hooks", {"webhooks/inbox.yaml": webhook("hook-token")})
    (hook,) = applied(world, tree)["webhooks"]
    tree["webhooks/inbox.yaml"] = webhook(
        "stripe-signing", "signature", "stripe", deliveryIdHeader="X-Event-Id", enabled="false"
    )
    changes = post(world, "plan", tree).json()["changes"]
    assert changes == [
        {
            "kind": "webhook",
            "name": "inbox",
            "action": "update",
            "fields": [
                "auth_mode",
                "delivery_id_header",
                "enabled",
                "secret_name",
                "signature_scheme",
                "secret_value",
            ],
        }
    ]
    done = applied(world, tree)
    assert done["webhooks"] == [hook]
    shown = world.api("GET", f"/factory/{done['factory_uid']}/webhooks/{hook['uid']}").json()
    assert (shown["auth_mode"], shown["signature_scheme"], shown["enabled"]) == (
        "signature",
        "stripe",
        False,
    )
    assert shown["delivery_id_header"] == "x-event-id"
    del tree["webhooks/inbox.yaml"]
    gone = applied(world, tree)
    assert gone["changes"] == [{"kind": "webhook", "name": "inbox", "action": "delete"}]
    assert (
        world.api("GET", f"/factory/{done['factory_uid']}/webhooks/{hook['uid']}").status_code
        == 404
    )


def test_signature_schemes_as_files_name_them(world: World) -> None:
    sw = "whsec_" + base64.b64encode(b"k" * 32).decode()
    set_secrets(world, {"sw-signing": sw, "plain-signing": "signing-secret"})
    files = {
        "webhooks/svix.yaml": webhook("sw-signing", "signature", "standard-webhooks"),
        **{
            f"webhooks/{scheme}.yaml": webhook(
                "sw-signing" if scheme == "standard_webhooks" else "plain-signing",
                "signature",
                scheme,
            )
            for scheme in ("standard_webhooks", "github", "stripe", "pagerduty", "sentry", "vercel")
        },
    }
    factory_uid = applied(world, minimal("schemes", files))["factory_uid"]
    shown = world.api("GET", f"/factory/{factory_uid}/webhooks").json()["webhooks"]
    assert {w["name"]: w["signature_scheme"] for w in shown} == {
        "svix": "standard_webhooks",  # the alias is stored under the scheme's own name
        "standard_webhooks": "standard_webhooks",
        "github": "github",
        "stripe": "stripe",
        "pagerduty": "pagerduty",
        "sentry": "sentry",
        "vercel": "vercel",
    }
    assert post(world, "plan", minimal("schemes", files)).json()["changes"] == []


def test_a_file_automation_starts_runs_carrying_its_resolved_configuration(world: World) -> None:
    set_secrets(world, {"hook-token": "t0ken", "LINEAR_KEY": "lin"})
    tree = minimal("runs", {"webhooks/inbox.yaml": webhook("hook-token")})
    (hook,) = applied(world, tree)["webhooks"]
    tree |= {
        "agents/worker/agent.md": "---\nagentType: IMPLEMENT\nmodel: auto-genius\n"
        "workerHost: box-1\nsecrets: [LINEAR_KEY]\n---\nWork.\n",
        "automations/triage/automation.md": automation(
            webhook_trigger(hook["uid"], "{action: [opened]}"),
            "Triage it.",
            agent="worker",
            harness="{model: auto}",
        ),
    }
    plan = post(world, "plan", tree)
    assert plan.status_code == 200, plan.json()
    factory_uid = applied(world, tree)["factory_uid"]
    agents = world.api("GET", f"/agent/identities?factory_uid={factory_uid}").json()["agents"]
    worker = next(a for a in agents if a["name"] == "worker")

    body = b'{"action": "opened"}'
    accepted = world.client.post(
        f"/webhooks/w/{hook['uid']}", content=body, headers={"Authorization": "Bearer t0ken"}
    )
    assert accepted.status_code == 202, accepted.text
    delivery = accepted.json()["delivery_id"]
    record_path = f"/factory/{factory_uid}/webhooks/{hook['uid']}/deliveries/{delivery}"
    record = eventually(lambda: (r := world.api("GET", record_path).json()).get("runs") and r)
    run = world.api("GET", f"/agent/runs/{record['runs'][0]['run_id']}").json()
    assert run["prompt"].startswith("Triage it.")
    assert run["agent_config"] == {
        "model_id": "auto",
        "base_prompt": "Work.\n",
        "worker_host": "box-1",
        "agent_uid": worker["uid"],
        "harness": {"type": "oz", "model": "auto", "model_id": "auto"},
        "runner": "small",
        "runner_config": {"name": "small", "setup_commands": [], "docker_image": "ubuntu:24.04"},
        "credential_strategy": "EXECUTOR",
        "agent": {"uid": worker["uid"], "name": "worker", "type": "IMPLEMENT"},
        "secrets": ["LINEAR_KEY"],
        "repositories": [{"provider": "github", "owner": "acme", "name": "api"}],
    }


def test_references_the_server_resolves_are_diagnostics_at_their_place(world: World) -> None:
    set_secrets(world, {"hook-token": "bad token"})  # not URL-safe: no url_token may read it
    taken = minimal("other")
    taken["factory.yaml"] += "alias: Taken\n"
    assert applied(world, taken)["factory_uid"]
    tree = minimal(
        "refs",
        {
            "factory.yaml": minimal("refs")["factory.yaml"] + "alias: TAKEN\nsecrets: [NOPE]\n",
            "agents/boss/agent.md": "---\nagentType: FOREMAN\nmodel: gpt 9\nrunner: elsewhere\n"
            "environmentId: env-nope\n---\nLead.\n",
            "webhooks/inbox.yaml": webhook("hook-token", "url_token", deliveryIdHeader="X-Api-Key"),
            "automations/hook/automation.md": automation(webhook_trigger("wh_" + "0" * 32)),
        },
    )
    found = _diagnostics(post(world, "plan", tree))
    assert [(d["path"], d["line"], d["code"]) for d in found] == [
        ("agents/boss/agent.md", 3, "FF_INVALID_REFERENCE"),  # model (not a model id)
        ("agents/boss/agent.md", 4, "FF_INVALID_REFERENCE"),  # runner
        ("agents/boss/agent.md", 5, "FF_INVALID_REFERENCE"),  # environment
        ("automations/hook/automation.md", 6, "FF_INVALID_REFERENCE"),  # webhook UID
        ("factory.yaml", 9, "FF_INVALID_VALUE"),  # alias
        ("factory.yaml", 10, "FF_INVALID_REFERENCE"),  # secret
        ("webhooks/inbox.yaml", 2, "FF_INVALID_VALUE"),  # url_token secret not URL-safe
        ("webhooks/inbox.yaml", 3, "FF_INVALID_VALUE"),  # credential header
    ]
    messages = " ".join(d["message"] for d in found)
    assert "gpt 9" in messages and "wh_" + "0" * 32 in messages and "Taken" not in messages
    assert _diagnostics(post(world, "apply", tree)) == found
    names = [f["name"] for f in world.api("GET", "/factory").json()["factories"]]
    assert "refs" not in names  # nothing was created


def test_webhook_uids_must_be_ones_this_server_issued_to_the_factory(world: World) -> None:
    set_secrets(world, {"hook-token": "t0ken"})
    mine = applied(world, minimal("mine", {"webhooks/inbox.yaml": webhook("hook-token")}))
    theirs = applied(world, minimal("theirs", {"webhooks/inbox.yaml": webhook("hook-token")}))
    tree = minimal("mine", {"webhooks/inbox.yaml": webhook("hook-token")})
    own_uid, foreign_uid = mine["webhooks"][0]["uid"], theirs["webhooks"][0]["uid"]
    tree["automations/a/automation.md"] = automation(webhook_trigger(own_uid))
    assert post(world, "plan", tree).status_code == 200
    tree["automations/a/automation.md"] = automation(webhook_trigger(foreign_uid))
    (problem,) = _diagnostics(post(world, "plan", tree))
    assert problem["path"] == "automations/a/automation.md" and foreign_uid in problem["message"]
    del tree["webhooks/inbox.yaml"]  # the webhook goes in this apply: nothing may name it
    tree["automations/a/automation.md"] = automation(webhook_trigger(own_uid))
    (problem,) = _diagnostics(post(world, "plan", tree))
    assert own_uid in problem["message"]


def test_resources_the_api_made_are_left_alone(world: World) -> None:
    factory_uid = applied(world, minimal("mixed", {}))["factory_uid"]
    hook = world.api("POST", f"/factory/{factory_uid}/webhooks", json={"name": "api-hook"})
    made = world.api(
        "POST",
        f"/factory/{factory_uid}/automations",
        json={
            "name": "api-made",
            "prompt": "p",
            "triggers": [{"provider": "github", "event": "push"}],
        },
    )
    assert hook.status_code == 201 and made.status_code == 201
    assert post(world, "plan", minimal("mixed", {})).json()["changes"] == []
    applied(world, minimal("mixed", {"automations/push/automation.md": automation(GITHUB_PUSH)}))
    listed = world.api("GET", f"/factory/{factory_uid}/automations").json()["automations"]
    assert {a["name"] for a in listed} == {"api-made", "push"}
    assert (
        world.api("GET", f"/factory/{factory_uid}/webhooks/{hook.json()['uid']}").status_code == 200
    )


def test_a_change_through_the_api_shows_in_the_next_plan(world: World) -> None:
    tree = minimal("drift", {"automations/push/automation.md": automation(GITHUB_PUSH)})
    factory_uid = applied(world, tree)["factory_uid"]
    stored = definition(world, factory_uid)
    uid = stored[("automation", "push")]["uid"]
    path = f"/factory/{factory_uid}/automations/{uid}"
    assert world.api("PATCH", path, json={"enabled": False, "prompt": "Other."}).status_code == 200
    assert post(world, "plan", tree).json()["changes"] == [
        {"kind": "automation", "name": "push", "action": "update", "fields": ["enabled", "prompt"]}
    ]
    applied(world, tree)
    shown = world.api("GET", path).json()
    assert shown["enabled"] is True and shown["prompt"] == "Handle it.\n"


def test_the_foreman_follows_the_tree(world: World) -> None:
    tree = minimal("foremen", {"agents/second/agent.md": "---\n---\nHelp.\n"})
    factory_uid = applied(world, tree)["factory_uid"]
    stored = definition(world, factory_uid)
    assert (
        world.api("GET", f"/factory/{factory_uid}").json()["foreman_agent_uid"]
        == (stored[("agent", "boss")]["uid"])
    )
    tree["agents/second/agent.md"] = "---\nagentType: MAIN\n---\nLead now.\n"
    del tree["agents/boss/agent.md"]
    changes = post(world, "plan", tree).json()["changes"]
    assert changes == [
        {"kind": "factory", "name": "foremen", "action": "update", "fields": ["foreman"]},
        {"kind": "agent", "name": "boss", "action": "delete"},
        {
            "kind": "agent",
            "name": "second",
            "action": "update",
            "fields": ["agent_type", "prompt"],
        },
    ]
    applied(world, tree)
    foreman = world.api("GET", f"/factory/{factory_uid}").json()["foreman_agent_uid"]
    assert foreman == stored[("agent", "second")]["uid"]
    dispatched = world.api("POST", f"/factory/{factory_uid}/runs", json={"prompt": "Go"})
    assert dispatched.status_code == 201, dispatched.json()


SCRIPT = "scripts/check.sh"


def test_a_change_to_a_skills_other_files_alone_is_planned_stored_and_reaches_runs(
    world: World,
) -> None:
    files = {
        "skills/review/SKILL.md": "---\nname: Review\n---\nRun scripts/check.sh.\n",
        "skills/review/scripts/check.sh": "#!/bin/sh\necho one\n",
        "agents/boss/skills/lead/SKILL.md": "---\n---\nLead well.\n",
    }
    factory_uid = applied(world, minimal("skill-files", files))["factory_uid"]
    assert post(world, "plan", minimal("skill-files", files)).json()["changes"] == []
    files["skills/review/scripts/check.sh"] = "#!/bin/sh\necho two\n"
    files["agents/boss/skills/lead/notes.md"] = "Ask first.\n"
    expected = [
        # the file that changed; a skill that had none has `files` now
        {"kind": "skill", "name": "review", "action": "update", "fields": [f"files.{SCRIPT}"]},
        {"kind": "agent_skill", "name": "boss/lead", "action": "update", "fields": ["files"]},
    ]
    planned = post(world, "plan", minimal("skill-files", files)).json()["changes"]
    assert sorted(planned, key=str) == sorted(expected, key=str)
    assert sorted(applied(world, minimal("skill-files", files))["changes"], key=str) == sorted(
        expected, key=str
    )
    assert post(world, "plan", minimal("skill-files", files)).json()["changes"] == []
    stored = definition(world, factory_uid)
    assert stored[("skill", "review")]["definition"]["files"] == {
        "scripts/check.sh": "#!/bin/sh\necho two\n"
    }
    assert stored[("agent_skill", "boss/lead")]["definition"]["files"] == {
        "notes.md": "Ask first.\n"
    }
    # a run made now carries the skills' files as applied
    boss = stored[("agent", "boss")]["uid"]
    made = world.api("POST", "/agent/runs", json={"prompt": "go", "agent_identity_uid": boss})
    assert made.status_code == 200, made.json()
    (claimed,) = Runner(world).claim()
    documents = {d["name"]: d for d in claimed["agent_config"]["skill_documents"]}
    assert documents["review"]["files"] == [
        {"path": "scripts/check.sh", "content": "#!/bin/sh\necho two\n"}
    ]
    assert documents["lead"]["files"] == [{"path": "notes.md", "content": "Ask first.\n"}]
    del files["agents/boss/skills/lead/notes.md"]  # the last other file gone: stored as none
    assert applied(world, minimal("skill-files", files))["changes"] == [
        {"kind": "agent_skill", "name": "boss/lead", "action": "update", "fields": ["files"]}
    ]
    assert post(world, "plan", minimal("skill-files", files)).json()["changes"] == []


def _task(title: str, prompt: str) -> str:
    return f"title: {title}\nprompt: {prompt}\nsuccessCriteria: Done\n"


def test_scorers_skills_and_suites_are_stored(world: World) -> None:
    files = {
        "scorers/quality/scorer.md": "---\nagents: [boss]\nlabels:\n  - {value: good, score: 1}\n"
        "  - {value: bad, score: 0}\npassingScore: 0.5\nmodel: claude-4-5-haiku\n---\nJudge it.\n",
        "skills/review/SKILL.md": "---\nname: Review\ndescription: How we review\n---\nBe kind.\n",
        "agents/boss/skills/lead/SKILL.md": "---\n---\nLead well.\n",
        "agents/helper/agent.md": "---\n---\nHelp.\n",
        "benchmarks/smoke/suite.yaml": "name: Smoke\nagent: helper\ntasks: [first, second]\n",
        "benchmarks/smoke/tasks/first.yaml": _task("First", "Do one"),
        "benchmarks/smoke/tasks/second.yaml": _task("Second", "Do two"),
    }
    factory_uid = applied(world, minimal("extras", files))["factory_uid"]
    stored = definition(world, factory_uid)
    assert {key for key in stored if key[0] not in ("factory", "agent", "runner")} == {
        ("scorer", "quality"),
        ("skill", "review"),
        ("agent_skill", "boss/lead"),
        ("benchmark_suite", "smoke"),
    }
    scorers = world.api("GET", f"/factory/{factory_uid}/scorers").json()["scorers"]
    assert [(s["name"], s["scope_mode"], s["agent_uids"]) for s in scorers] == [
        ("quality", "selected_agents", [stored[("agent", "boss")]["uid"]])
    ]
    suites = world.api("GET", f"/factory/{factory_uid}/benchmark-suites").json()["suites"]
    (suite,) = suites
    helper = stored[("agent", "helper")]["uid"]
    assert suite["name"] == "Smoke" and suite["agent_uid"] == helper
    tasks = world.api("GET", f"/factory/{factory_uid}/benchmark-suites/{suite['uid']}").json()
    assert [task["title"] for task in tasks["tasks"]] == ["First", "Second"]
    files["benchmarks/smoke/tasks/first.yaml"] = (
        "title: Second\nprompt: Do one\nsuccessCriteria: Done\n"
    )
    files["benchmarks/smoke/tasks/second.yaml"] = (
        "title: First\nprompt: Do two\nsuccessCriteria: Done\n"
    )
    assert applied(world, minimal("extras", files))["changes"] == [
        {"kind": "benchmark_suite", "name": "smoke", "action": "update", "fields": ["tasks"]}
    ]  # two titles swapped: unique titles hold throughout
    assert post(world, "plan", minimal("extras", files)).json()["changes"] == []

    launched = world.api("POST", f"/factory/{factory_uid}/benchmark-suites/{suite['uid']}/runs")
    assert launched.status_code == 201, launched.json()
    trials = world.api(
        "GET", f"/factory/{factory_uid}/benchmark-runs/{launched.json()['uid']}/trials"
    ).json()
    run_ids = [trial["agent_run_id"] for trial in trials["data"]]
    assert len(run_ids) == 2 and _agents_of(world, run_ids) == {helper}  # not the foreman


def _agents_of(world: World, run_ids: list[str]) -> set[str | None]:
    from sqlalchemy import select

    from gateway.foundation.store import tables as t

    async def read(services: Any) -> set[str | None]:
        async with services.database.read() as conn:
            query = select(t.runs.c.agent_uid).where(t.runs.c.run_id.in_(run_ids))
            return set((await conn.execute(query)).scalars())

    found: set[str | None] = world.client.run(read)
    return found


def test_who_may_plan_and_apply(world: World) -> None:
    tree = minimal("guarded", {})
    assert (
        world.api("POST", "/factory-files/plan", json={"files": tree}, headers={}).status_code
        == 401
    )
    agent = world.api("POST", "/factory-files/apply", json={"files": tree}, headers=world.agent)
    assert agent.status_code == 403
    factory_uid = applied(world, tree)["factory_uid"]
    stranger = world.api(
        "POST",
        "/factory-files/apply",
        json={"files": tree, "factory_uid": factory_uid},
        headers=world.stranger,
    )
    assert stranger.status_code == 403
    missing = post(world, "apply", tree, factory_uid="fac_nope")
    assert missing.status_code == 404
    by_uid = post(world, "apply", minimal("renamed", {}), factory_uid=factory_uid)
    assert by_uid.status_code == 200
    assert by_uid.json()["changes"] == [
        {"kind": "factory", "name": "renamed", "action": "update", "fields": ["name"]}
    ]
    team = {**world.user, "X-Service-Team-Uid": world.other_team_uid}
    foreign = world.api("POST", "/factory-files/plan", json={"files": tree}, headers=team)
    assert foreign.status_code == 403


def test_a_tree_posted_from_the_repository_root(world: World) -> None:
    tree = {f"deploy/factory/{path}": text for path, text in minimal("nested", {}).items()}
    tree["README.md"] = "# the repository\n"
    tree["deploy/factory/agents/boss/agent.md"] = "---\nagentType: FOREMAN\nmodel: no pe\n---\n"
    (problem,) = _diagnostics(post(world, "plan", tree))
    assert problem["path"] == "deploy/factory/agents/boss/agent.md" and problem["line"] == 3
    tree["deploy/factory/agents/boss/agent.md"] = "---\nagentType: FOREMAN\nmodel: nope\n---\n"
    (warning,) = post(world, "plan", tree).json()["warnings"]  # where the repository has it
    assert warning["path"] == "deploy/factory/agents/boss/agent.md" and warning["line"] == 3
    tree["deploy/factory/agents/boss/agent.md"] = "---\nagentType: FOREMAN\n---\n"
    assert applied(world, tree)["changes"][0] == {
        "kind": "factory",
        "name": "nested",
        "action": "create",
    }
    two = tree | {f"other/{path}": text for path, text in minimal("two", {}).items()}
    (problem,) = _diagnostics(post(world, "plan", two))
    assert problem["code"] == "FF_MISSING_FACTORY" and "other/factory.yaml" in problem["message"]


def test_a_tree_larger_than_other_bodies_is_accepted_up_to_its_limits(world: World) -> None:
    prompt = "Review with care.\n" * 13_000  # ~230 KB a prompt, under 256 KiB a file
    files = {f"agents/helper-{n}/agent.md": f"---\n---\n{prompt}" for n in range(6)}
    tree = minimal("large", files)
    assert sum(len(text) for text in tree.values()) > 1_048_576  # more than other API bodies
    assert applied(world, tree)["changes"][0]["action"] == "create"
    oversized = {f"agents/more-{n}/agent.md": "x" * 200_000 for n in range(50)}
    response = post(world, "plan", tree | oversized)
    assert response.status_code == 413, response.status_code


def test_a_factory_made_through_the_api_takes_the_tree_and_its_foreman(world: World) -> None:
    """World's factory has an API-made foreman: the tree's FOREMAN replaces it, the old agent
    stays an agent of the team."""
    tree = minimal("Factory A", {})
    plan = post(world, "plan", tree, factory_uid=world.factory_uid).json()["changes"]
    factory_change = plan[0]
    assert factory_change["kind"] == "factory" and factory_change["action"] == "update"
    assert "foreman" in factory_change["fields"] and "repositories" in factory_change["fields"]
    assert plan[1:] == [
        {"kind": "runner", "name": "small", "action": "create"},
        {"kind": "agent", "name": "boss", "action": "create"},
    ]
    applied(world, tree, factory_uid=world.factory_uid)
    stored = definition(world, world.factory_uid)
    factory = world.api("GET", f"/factory/{world.factory_uid}").json()
    assert factory["foreman_agent_uid"] == stored[("agent", "boss")]["uid"]
    assert world.api("GET", f"/agent/identities/{world.agent_uid}").status_code == 200
    assert post(world, "plan", tree, factory_uid=world.factory_uid).json()["changes"] == []


def test_triggers_that_can_never_fire_here_are_warnings(world: World) -> None:
    """A Slack filter by channel or user name (Slack's events carry ids only) and a Microsoft
    Teams trigger (no connection here): plan and apply warn, and the tree applies."""
    by_name = (
        "  - provider: slack\n    event: reaction_added\n    filter:\n"
        "      channels: [intake, triage]\n      users: [ana]\n      emojis: [ticket]\n"
    )
    teams = (
        "  - provider: teams\n    event: app_mention\n    filter:\n"
        "      team_ids: [0f8fad5b-d9cb-469f-a165-70867728950e]\n"
        "      channel_ids: ['19:abc@thread.tacv2']\n"
    )
    ids = "  - provider: slack\n    event: app_mention\n    filter:\n      channel_ids: [C0123AB]\n"
    files = minimal(
        files={
            "automations/by-name/automation.md": automation(by_name),
            "automations/teams/automation.md": automation(teams),
            "automations/by-id/automation.md": automation(ids),
        }
    )
    planned = post(world, "plan", files)
    assert planned.status_code == 200, planned.json()
    warnings = planned.json()["warnings"]
    assert [(w["path"], w["code"]) for w in warnings] == [
        ("automations/by-name/automation.md", "FF_NEVER_FIRES"),
        ("automations/by-name/automation.md", "FF_NEVER_FIRES"),
        ("automations/teams/automation.md", "FF_NEVER_FIRES"),
    ]
    channels, users, no_connection = warnings
    assert channels["line"] == 6 and channels["message"].startswith(
        "slack channel_ids: 'intake' is a name, and Slack's events carry ids only"
    )
    assert "(channel_ids: [C0123ABCD])" in channels["message"]
    assert users["message"].startswith("slack user_ids: 'ana' is a name")
    assert no_connection["message"] == (
        "trigger teams / app_mention: this server has no teams connection, so the trigger "
        "never fires here"
    )
    done = applied(world, files)
    assert done["warnings"] == warnings and len(done["changes"]) == 6
    clean = applied(world, minimal(files={"automations/by-id/automation.md": automation(ids)}))
    assert clean["warnings"] == []
