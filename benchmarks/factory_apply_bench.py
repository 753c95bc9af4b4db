"""Applying a factory definition tree of 50 automations on SQLite.

    python -m benchmarks.factory_apply_bench [--automations 50] [--rounds 5]

Each round, on a fresh SQLite store in a temporary directory (migrated before the clock
starts), times what POST /factory-files/apply does, in process (no HTTP): parse the posted tree,
find the factory, read its stored definition, check the references only the server resolves,
plan, write in one transaction. Cases, in this order on the same store:

    create          the tree on an empty store: the factory, 3 runners, 5 agents, 5 webhooks,
                    N automations (github, slack, linear, schedule and factory triggers)
    unchanged       the same tree again: the plan is empty, nothing is written
    update all      every automation's prompt and one filter changed
    webhook hooks   5 of the automations turned into webhook automations naming the UIDs the
                    create gave the webhooks

Prints a table (median and range over the rounds, milliseconds) and one JSON line. The target:
`create` under 1 s with 50 automations. Exits 1 when a plan is not what the case expects.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from gateway.composition import wiring
from gateway.foundation.accounts import identities
from gateway.foundation.services import Services
from gateway.kernel.settings import load_settings
from gateway.platform.factory_files.apply import Caller, apply_tree
from gateway.platform.factory_files.models import Plan
from gateway.platform.factory_files.posted import parse_posted

TARGET_CREATE_S = 1.0
TRIGGERS = (
    "  - provider: github\n    event: pull_request_opened\n    filter:\n"
    "      repos: [acme/api]\n      labels: {{not_in: [wip-{i}]}}\n",
    "  - provider: slack\n    event: reaction_added\n    filter:\n"
    "      channels: [intake-{i}]\n      emojis: [eyes]\n",
    "  - provider: linear\n    event: issue_created\n    filter:\n      teams: [Team{i}]\n",
    "  - provider: schedule\n    event: cron_fired\n"
    "    schedule: {{name: s{i}, cron: '{m} 3 * * *'}}\n",
    "  - provider: factory\n    event: work_item_stage_changed\n    filter:\n"
    "      stages: [IN_REVIEW]\n",
)
AGENTS = ("boss", "triage", "implement", "review", "verify")


def tree(
    automations: int, prompt: str = "Handle event {i}.", hooks: dict[str, str] | None = None
) -> dict[str, str]:
    files = {
        "factory.yaml": "schemaVersion: v1alpha1\nname: bench\nrepositories:\n"
        "  - {owner: acme, name: api}\nagentDefaults:\n  model: auto\n  runner: small\n",
        **{
            f"runners/{name}.yaml": "platform:\n  linux:\n    dockerImage: ubuntu:24.04\n"
            for name in ("small", "large", "arm")
        },
        **{
            f"agents/{name}/agent.md": "---\n"
            + ("agentType: FOREMAN\n" if name == "boss" else "model: auto-genius\n")
            + f"---\nYou are {name}.\n"
            for name in AGENTS
        },
        **{
            f"webhooks/hook-{n}.yaml": "authMode: token\nsecretName: HOOK_TOKEN\n" for n in range(5)
        },
    }
    uids = list((hooks or {}).values())
    for i in range(automations):
        if i < len(uids):
            trigger = (
                "  - provider: webhook\n    event: received\n    filter:\n"
                f"      webhook_ids: [{uids[i]}]\n      payload: {{action: [opened]}}\n"
            )
        else:
            trigger = TRIGGERS[i % len(TRIGGERS)].format(i=i, m=i % 60)
        agent = AGENTS[i % len(AGENTS)]
        files[f"automations/auto-{i:03d}/automation.md"] = (
            f"---\nagent: {agent}\ntriggers:\n{trigger}---\n{prompt.format(i=i)}\n"
        )
    return files


async def _timed(call: Callable[[], Awaitable[Plan]]) -> tuple[float, Plan]:
    started = time.perf_counter()
    plan = await call()
    return time.perf_counter() - started, plan


async def one_round(automations: int, directory: Path) -> dict[str, float]:
    settings = load_settings(
        {
            "GATEWAY_DATABASE_URL": f"sqlite:///{directory}/bench.db",
            "GATEWAY_SECRET_KEY": base64.urlsafe_b64encode(b"f" * 32).decode(),
            "GATEWAY_EVALUATOR": "off",
            "GATEWAY_LOG_LEVEL": "warning",
        }
    )
    services, _consumer = await wiring.start(settings, with_worker=False, serving=False)
    try:
        team = await _team(services)
        caller = Caller(team_uid=team)

        def apply(files: dict[str, str]) -> Callable[[], Awaitable[Plan]]:
            return lambda: apply_tree(services, parse_posted(files), caller, None)

        first = tree(automations)
        create_s, created = await _timed(apply(first))
        _expect(
            len([c for c in created.changes if c.kind == "automation"]) == automations, "create"
        )
        unchanged_s, again = await _timed(apply(first))
        _expect(again.changes == [], "unchanged")
        edited = tree(automations, prompt="Look at event {i} again.")
        update_s, updated = await _timed(apply(edited))
        _expect(len(updated.changes) == automations, "update all")
        uids = {hook.name: hook.uid or "" for hook in created.webhooks}
        hooked_s, hooked = await _timed(apply(tree(automations, "Look at event {i} again.", uids)))
        _expect(len(hooked.changes) == len(uids), "webhook hooks")
        return {
            "create": create_s,
            "unchanged": unchanged_s,
            "update all": update_s,
            "webhook hooks": hooked_s,
        }
    finally:
        await services.close()


async def _team(services: Services) -> str:
    async with services.database.transaction() as conn:
        team = await identities.create_team(conn, "Bench")
        await identities.set_team_secret(conn, services.secret_box, team, "HOOK_TOKEN", "t0ken")
    return team


def _expect(ok: bool, case: str) -> None:
    if not ok:
        print(f"FAILED: {case}: the plan is not what the case expects", file=sys.stderr)
        sys.exit(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--automations", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    rounds: list[dict[str, float]] = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as directory:
            rounds.append(asyncio.run(one_round(args.automations, Path(directory))))
    report: dict[str, Any] = {"automations": args.automations, "rounds": args.rounds}
    print(f"{'case':<14} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
    for case in rounds[0]:
        values = [r[case] * 1000 for r in rounds]
        median = statistics.median(values)
        report[case] = {"median_ms": round(median, 1), "min_ms": round(min(values), 1),
                        "max_ms": round(max(values), 1)}  # fmt: skip
        print(f"{case:<14} {median:>10.1f} {min(values):>8.1f} {max(values):>8.1f}")
    create_s = report["create"]["median_ms"] / 1000
    report["target_create_s"] = TARGET_CREATE_S
    report["met"] = create_s < TARGET_CREATE_S
    print(json.dumps(report))
    return 0 if report["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
