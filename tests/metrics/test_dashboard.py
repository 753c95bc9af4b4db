"""docs/grafana-dashboard.json: valid, every metric its panels query is in a real scrape, and
every query is one the picture's script (benchmarks/dashboard_picture.py, with testbed/promql.py)
can draw."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from testbed.promql import evaluate, parse_expr
from tests.ingress.hooks import add_webhook
from tests.metrics.scrape import names, parse
from tests.support import GatewayClient, World

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"
PICTURE = DASHBOARD.with_suffix(".png")


def _dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def _exprs() -> list[str]:
    return [target["expr"] for panel in _dashboard()["panels"] for target in panel["targets"]]


def test_the_dashboard_is_a_grafana_dashboard() -> None:
    dashboard = _dashboard()
    assert dashboard["title"] and dashboard["uid"]
    panels = dashboard["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels) >= 8
    for panel in panels:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24 and pos["h"] > 0, panel["title"]
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}"
        assert panel["targets"] and all(t["expr"] for t in panel["targets"])
    assert PICTURE.stat().st_size > 10_000  # the picture the docs show is there


def test_every_queried_metric_is_in_a_real_scrape(client: GatewayClient) -> None:
    world = World.create(client)
    hook = add_webhook(client, world)
    assert client.post(hook.path, content=b"{}", headers=hook.auth).status_code == 202
    scraped = names(parse(client.get("/metrics").text))
    queried = {name for expr in _exprs() for name in re.findall(r"\bgateway_[a-z_]+", expr)}
    assert len(queried) >= 8
    assert queried <= scraped, queried - scraped


def test_the_picture_script_draws_every_query() -> None:
    # two scrapes a second apart: one accepted delivery, one bucket of latency
    empty: dict[str, dict[frozenset[tuple[str, str]], float]] = {}
    later = {
        "gateway_ingress_deliveries_total": {frozenset({("outcome", "accepted")}): 1.0},
        "gateway_ingress_request_duration_seconds_bucket": {
            frozenset({("le", "0.001")}): 1.0,
            frozenset({("le", "+Inf")}): 1.0,
        },
        "gateway_evaluator_backlog": {frozenset(): 3.0},
    }
    for expr in _exprs():
        parse_expr(expr)  # raises for a form the script cannot evaluate
    rate = evaluate(
        "sum by (outcome) (rate(gateway_ingress_deliveries_total[1m]))",
        [(0.0, empty), (1.0, later)],
        window=15,
    )
    assert rate == {"accepted": [(1.0, 1.0)]}
    p99 = evaluate(
        "histogram_quantile(0.99, sum by (le) (rate("
        "gateway_ingress_request_duration_seconds_bucket[1m])))",
        [(0.0, empty), (1.0, later)],
        window=15,
    )
    assert p99[""][0][1] == pytest.approx(0.00099)
    assert evaluate("max(gateway_evaluator_backlog)", [(1.0, later)], 15) == {"": [(1.0, 3.0)]}
