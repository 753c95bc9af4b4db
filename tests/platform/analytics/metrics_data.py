"""A small factory history with hand-computed metrics (see test_factory_metrics.py beside it).

Window under test: [2026-10-01, 2026-10-15). Runs of factory F (r4 before the window, r6 at its
exclusive end) and one run of another factory G; usage, PR artifacts and their trees:

    run  root  created           creator     source    agent  state      usage (model: $)
    r1   r1    10-01 10:00       user        API       -      SUCCEEDED  m1 llm 1.00, m1 tools 0.50
    r2   r1    10-02 09:00       agent       API       A      SUCCEEDED  m2 llm 2.00
    r3   r3    10-05 12:00       -           WEBHOOK   A      FAILED     - llm 0.25
    r7   r7    10-07 08:00       agent       SCHEDULE  A      QUEUED     m1 llm 0.00
    r4   r4    09-20 00:00       user        API       -      SUCCEEDED  m1 llm 4.00
    r6   r6    10-15 00:00       user        API       -      SUCCEEDED  m1 llm 16.00
    g1   g1    10-03 00:00       user        API       -      SUCCEEDED  m1 llm 8.00  (factory G)

    PR   first by  at            state (latest)        tree  tree PRs  tree $  PR $
    a    r2        10-02 10:00   open, merged by r3    r1    2         3.50    1.75
    b    r1        10-01 12:00   closed                r1    2         3.50    1.75
    c    r3        10-05 13:00   open                  r3    1         0.25    0.25
    d    r4        10-03 00:00   merged                r4    2         4.00    2.00
    e    r4        09-21 00:00   open (before window)  r4    2         4.00    2.00
    g    g1        10-03 01:00   open (factory G)      g1    1         8.00    8.00
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from msgspec import structs
from sqlalchemy import insert, select

from gateway.foundation.accounts import factories, identities
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.platform.analytics import pull_requests
from gateway.platform.runners.models import UsageDimensions


def at(month: int, day: int, hour: int = 0) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


@dataclass
class History:
    factory_uid: str
    other_factory_uid: str
    user_uid: str
    user_email: str
    agent_uid: str
    run: dict[str, str]  # short name -> run id
    pr: dict[str, str]  # short name -> url


RUNS = {
    # name: (root, created, creator_kind, source, agent?, state, factory G?)
    "r1": ("r1", at(10, 1, 10), "user", "API", False, "SUCCEEDED", False),
    "r2": ("r1", at(10, 2, 9), "agent", "API", True, "SUCCEEDED", False),
    "r3": ("r3", at(10, 5, 12), None, "WEBHOOK", True, "FAILED", False),
    "r7": ("r7", at(10, 7, 8), "agent", "SCHEDULE", True, "QUEUED", False),
    "r4": ("r4", at(9, 20), "user", "API", False, "SUCCEEDED", False),
    "r6": ("r6", at(10, 15), "user", "API", False, "SUCCEEDED", False),
    "g1": ("g1", at(10, 3), "user", "API", False, "SUCCEEDED", True),
}
USAGE = [  # run, model, component, dollars, input tokens
    ("r1", "m1", "llm", 1.00, 100),
    ("r1", "m1", "tools", 0.50, 0),
    ("r2", "m2", "llm", 2.00, 200),
    ("r3", None, "llm", 0.25, 10),
    ("r7", "m1", "llm", 0.00, 0),
    ("r4", "m1", "llm", 4.00, 0),
    ("r6", "m1", "llm", 16.00, 0),
    ("g1", "m1", "llm", 8.00, 0),
]
ARTIFACTS = [  # in the order runs reported them: PR, run, time, state
    ("e", "r4", at(9, 21), "open"),
    ("b", "r1", at(10, 1, 12), "closed"),
    ("a", "r2", at(10, 2, 10), "open"),
    ("d", "r4", at(10, 3), "merged"),
    ("g", "g1", at(10, 3, 1), "open"),
    ("c", "r3", at(10, 5, 13), "open"),
    ("a", "r3", at(10, 6), "merged"),
]


async def build(services: Services) -> History:
    tag = secrets.token_hex(4)
    async with services.database.transaction() as conn:
        team = await identities.create_team(conn, "Metrics")
        email = f"m{tag}@example.com"
        user, _ = await identities.create_user(conn, team, email)
        agent, _ = await identities.create_agent(conn, team, "Builder")
        factory = await factories.create_factory(conn, team, "F", None, agent)
        other = await factories.create_factory(conn, team, "G", None, agent)
        history = History(factory, other, user, email, agent, {}, {})
        history.run = {name: f"run_{tag}_{name}" for name in RUNS}
        history.pr = {name: f"https://git.test/{tag}/pull/{name}" for name in "abcdeg"}
        for name, spec in RUNS.items():
            await conn.execute(insert(t.runs).values(**_run(history, name, *spec)))
        for i, (run, model, component, dollars, tokens) in enumerate(USAGE):
            row = {"id": f"use_{tag}_{i}", "run_id": history.run[run], "model_id": model}
            row |= structs.asdict(UsageDimensions.of(await _load(conn, history.run[run])))
            row |= {"input_tokens": tokens, "output_tokens": tokens // 10}
            row |= {"component": component, "cost_usd": dollars, "reported_at": at(10, 20)}
            await conn.execute(insert(t.run_usage).values(**row))
        for i, (pr, run, moment, state) in enumerate(ARTIFACTS):
            await _artifact(conn, history, f"art_{tag}_{i}", pr, run, moment, state)
    return history


def _run(
    history: History,
    name: str,
    root: str,
    created: datetime,
    creator_kind: str | None,
    source: str,
    by_agent: bool,
    state: str,
    in_other: bool,
) -> dict[str, Any]:
    run_id = history.run[name]
    creator = {"user": history.user_uid, "agent": history.agent_uid}.get(creator_kind or "")
    return {
        "run_id": run_id,
        "team_uid": None,
        "factory_uid": history.other_factory_uid if in_other else history.factory_uid,
        "conversation_id": f"conv_{run_id}",
        "parent_run_id": None if root == name else history.run[root],
        "root_run_id": history.run[root],
        "prompt": "p",
        "state": state,
        "source": source,
        "run_type": "cloud",
        "creator_kind": creator_kind,
        "creator_uid": creator,
        "agent_uid": history.agent_uid if by_agent else None,
        "created_at": created,
        "updated_at": created,
    }


async def _artifact(
    conn: Any, history: History, uid: str, pr: str, run: str, moment: datetime, state: str
) -> None:
    artifact = {"artifact_type": "PULL_REQUEST", "url": history.pr[pr], "pr_state": state}
    artifact |= {"title": f"PR {pr}", "branch": f"b-{pr}"}
    run_id = history.run[run]
    await conn.execute(
        insert(t.run_artifacts).values(
            artifact_uid=uid, run_id=run_id, created_at=moment, **artifact
        )
    )
    await pull_requests.record(
        conn,
        await _load(conn, run_id),
        uid,
        moment,
        url=artifact["url"],
        title=artifact["title"],
        branch=artifact["branch"],
        state=artifact["pr_state"],
    )


async def _load(conn: Any, run_id: str) -> Any:
    return (await conn.execute(select(t.runs).where(t.runs.c.run_id == run_id))).one()
