"""The attributed cost of pull requests, kept with them (docs/metrics.md, "Cost attribution").

A PR's cost is its run tree's spend divided by the number of PRs the tree produced. Both change
over time (a runner reports usage; the tree reports another PR), so the figures are written,
not computed per request: `refresh_tree` rewrites the costs of every PR of one tree from its
usage. Metrics then read one row per PR (and per PR and component) in a range, however long
ago the usage was reported.
"""

from __future__ import annotations

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t

p, c, u = t.pull_requests, t.pr_costs, t.run_usage


async def refresh_tree(conn: AsyncConnection, root_run_id: str) -> None:
    """Recomputes the attributed costs of the PRs of the tree rooted at `root_run_id`."""
    # one refresh of a tree at a time: concurrent ones would each miss the other's rows
    lock = select(t.runs.c.run_id).where(t.runs.c.run_id == root_run_id).with_for_update()
    await conn.execute(lock)
    prs = (
        await conn.execute(
            select(p.c.url, p.c.factory_uid, p.c.first_seen_at).where(
                p.c.root_run_id == root_run_id
            )
        )
    ).all()
    if not prs:
        return
    spend = await conn.execute(
        select(u.c.component, func.sum(u.c.cost_usd))
        .where(u.c.root_run_id == root_run_id)
        .group_by(u.c.component)
    )
    shares = {component: float(cost or 0) / len(prs) for component, cost in spend}
    urls = [pr.url for pr in prs]
    await conn.execute(delete(c).where(c.c.url.in_(urls)))
    rows = [
        {
            "url": pr.url,
            "component": component,
            "factory_uid": pr.factory_uid,
            "first_seen_at": pr.first_seen_at,
            "cost_usd": cost,
        }
        for pr in prs
        for component, cost in shares.items()
    ]
    if rows:
        await conn.execute(insert(c), rows)
    await conn.execute(
        update(p)
        .where(p.c.root_run_id == root_run_id)
        .values(tree_pr_count=len(prs), cost_usd=sum(shares.values()))
    )
