"""The picture of docs/grafana-dashboard.json (docs/grafana-dashboard.png), without Grafana.

    .venv/bin/python -m benchmarks.dashboard_picture [--seconds 120] [--window 15]

Runs a real `gateway serve --workers 2` on a Redis of its own (SQLite store, evaluator child,
one `gateway runner` claiming the runs), sends it a changing mix of deliveries (accepted,
duplicates, each kind of refusal, a burst past the rate limit), scrapes /metrics every second,
then evaluates each panel's PromQL over that scrape series (the few forms the dashboard uses:
rate, sum by, max, histogram_quantile) and draws the panels where the dashboard places them, as
an HTML page of SVG charts that headless Chromium photographs. Rates use `--window` seconds
instead of the dashboard's 1m, so a two-minute run shows movement. Set BENCH_PORTS to keep its
ports in a range.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from testbed.procs import free_port, spawn, stop
from testbed.promql import Scrape, evaluate
from testbed.redis_server import redis_server

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "docs" / "grafana-dashboard.json"
Series = dict[str, list[tuple[float, float]]]  # legend -> (t, value)
COLOURS = ("#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9", "#fade2a")


# --- the run -----------------------------------------------------------------------------------


def scrape(base: str) -> Scrape:
    found: Scrape = defaultdict(dict)
    for family in text_string_to_metric_families(httpx.get(f"{base}/metrics").text):
        for sample in family.samples:
            found[sample.name][frozenset(sample.labels.items())] = sample.value
    return found


def _gateway(env: dict[str, str], *argv: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "gateway", *argv], env=env, capture_output=True, check=True
    )
    return json.loads(done.stdout)


def record(seconds: int, workdir: Path) -> list[tuple[float, Scrape]]:
    with redis_server() as redis:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")} | {
            "GATEWAY_DATABASE_URL": f"sqlite:///{workdir}/gw.db",
            "GATEWAY_REDIS_URL": redis.url,
            "GATEWAY_SECRET_KEY": base64.urlsafe_b64encode(os.urandom(32)).decode(),
            "GATEWAY_WEBHOOK_BASE_URL": base,
            "GATEWAY_LOG_LEVEL": "warning",
            "PYTHONPATH": str(ROOT),
        }
        demo = _gateway(env, "admin", "demo")
        server = spawn(
            [sys.executable, "-m", "gateway", "serve", "--port", str(port), "--workers", "2"],
            env=env,
            log=workdir / "serve.log",
        )
        runner = None
        try:
            _wait(base)
            user = {"Authorization": f"Bearer {demo['user_api_key']}"}
            api = f"{base}/api/v1/factory/{demo['factory_uid']}"
            hooks = []
            for n in range(8):  # 60 deliveries a minute each: several, for a visible rate
                made = httpx.post(f"{api}/webhooks", json={"name": f"h{n}"}, headers=user)
                made.raise_for_status()
                hooks.append((made.json()["uid"], made.json()["secret"]))
            triggers = [
                {"provider": "webhook", "event": "received", "filter": {"webhook_ids": [uid]}}
                for uid, _ in hooks
            ]
            automation = {"name": "a", "prompt": "Look.", "triggers": triggers}
            httpx.post(f"{api}/automations", json=automation, headers=user).raise_for_status()
            runner = spawn(
                [sys.executable, "-m", "gateway", "runner", "--command", "true"],
                env=env | {"GATEWAY_RUNNER_KEY": demo["agent_api_key"], "GATEWAY_API_URL": base},
                log=workdir / "runner.log",
            )
            return _traffic(base, hooks, seconds)
        finally:
            if runner is not None:
                stop(runner)
            stop(server)


def _wait(base: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError("gateway did not become ready")


def _traffic(base: str, hooks: list[tuple[str, str]], seconds: int) -> list[tuple[float, Scrape]]:
    """Each second a mix that changes over the run; a scrape after each."""
    scrapes = []
    started = time.monotonic()
    with httpx.Client(base_url=base, timeout=5) as client:
        for second in range(seconds):
            phase = second / seconds
            for uid, token in hooks:
                auth = {"Authorization": f"Bearer {token}"}
                path = f"/webhooks/w/{uid}"
                sends: list[Callable[[], Any]] = []
                if second % 2 == 0:  # ~half the budget of 60 a minute
                    event = {"X-Service-Delivery-Id": uuid.uuid4().hex, **auth}
                    sends += [lambda p=path, h=event: client.post(p, content=b"{}", headers=h)]
                    if second % 6 == 0:  # the sender retries: a duplicate
                        sends += [lambda p=path, h=event: client.post(p, content=b"{}", headers=h)]
                if 0.3 < phase < 0.5:  # someone probes with a wrong token
                    wrong = {"Authorization": "Bearer wrong"}
                    sends += [lambda p=path, h=wrong: client.post(p, content=b"{}", headers=h)]
                if second % 5 == 0:
                    sends += [lambda p=path: client.post(p, content=b"{}")]  # header_missing
                if second % 7 == 0:
                    sends += [lambda p=path, h=auth: client.post(p, content=b"{x", headers=h)]
                for send in sends:
                    send()
            if 0.6 < phase < 0.65:  # a burst past the rate limit of the first webhook
                uid, token = hooks[0]
                for _ in range(40):
                    client.post(
                        f"/webhooks/w/{uid}",
                        content=b"[]",
                        headers={"Authorization": f"Bearer {token}"},
                    )
            scrapes.append((time.monotonic() - started, scrape(base)))
            time.sleep(max(0.0, second + 1 - (time.monotonic() - started)))
    return scrapes


# --- the picture -------------------------------------------------------------------------------

CELL_W, CELL_H, WIDTH = 1600 / 24, 34, 1600


def _svg(series: dict[str, dict[str, list]], w: float, h: float, unit: str) -> str:
    points = [p for lines in series.values() for line in lines.values() for p in line]
    if not points:
        return f'<text x="{w / 2}" y="{h / 2}" class="none">No data</text>'
    t_max = max(t for t, _ in points) or 1
    v_max = max(v for _, v in points) * 1.15 or 1
    left, bottom = 56, 20
    plot_w, plot_h = w - left - 10, h - bottom - 6
    parts = []
    for k in range(5):
        v = v_max * k / 4
        y = 6 + plot_h * (1 - k / 4)
        parts.append(f'<line x1="{left}" x2="{w - 10}" y1="{y}" y2="{y}" class="grid"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4}" class="axis" text-anchor="end">'
                     f"{_fmt(v, unit)}</text>")  # fmt: skip
    for k in range(0, int(t_max) + 1, 30):
        x = left + plot_w * k / t_max
        parts.append(f'<text x="{x}" y="{h - 4}" class="axis" text-anchor="middle">{k}s</text>')
    colour = 0
    for lines in series.values():
        for line in lines.values():
            path = " ".join(
                f"{left + plot_w * t / t_max:.1f},{6 + plot_h * (1 - v / v_max):.1f}"
                for t, v in line
            )
            c = COLOURS[colour % len(COLOURS)]
            parts.append(f'<polyline points="{path}" stroke="{c}" class="line"/>')
            colour += 1
    return "".join(parts)


def _fmt(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"
    suffix = {"reqps": " req/s", "ops": "/s"}.get(unit, "")
    return f"{value:.1f}{suffix}" if value < 10 else f"{value:.0f}{suffix}"


def page(dashboard: dict[str, Any], scrapes: list[tuple[float, Scrape]], window: float) -> str:
    blocks = []
    height = 0.0
    for panel in dashboard["panels"]:
        pos = panel["gridPos"]
        x, y = pos["x"] * CELL_W, pos["y"] * CELL_H + 48
        w, h = pos["w"] * CELL_W - 8, pos["h"] * CELL_H - 8
        height = max(height, y + h + 16)
        unit = panel["fieldConfig"]["defaults"].get("unit", "short")
        series: dict[str, dict[str, list]] = {}
        legend = []
        colour = 0
        for target in panel["targets"]:
            lines = evaluate(target["expr"], scrapes, window)
            lines = {k: v for k, v in sorted(lines.items()) if any(val for _, val in v)}
            series[target["refId"]] = lines
            for key in lines:
                name = target["legendFormat"].replace("{{outcome}}", key)
                name = name.replace("{{status}}", key).replace("{{result}}", key)
                c = COLOURS[colour % len(COLOURS)]
                legend.append(f'<span><i style="background:{c}"></i>{html.escape(name)}</span>')
                colour += 1
        blocks.append(
            f'<div class="panel" style="left:{x}px;top:{y}px;width:{w}px;height:{h}px">'
            f'<div class="title">{html.escape(panel["title"])}</div>'
            f'<svg width="{w - 16}" height="{h - 64}">{_svg(series, w - 16, h - 64, unit)}</svg>'
            f'<div class="legend">{"".join(legend)}</div></div>'
        )
    return f"""<!doctype html><html><head><style>
body {{ margin:0; background:#111217; font-family:Inter,Helvetica,Arial,sans-serif; color:#ccccdc;
  width:{WIDTH}px; height:{height}px; position:relative }}
.head {{ position:absolute; left:12px; top:12px; font-size:18px; color:#fff }}
.head small {{ color:#8e8e9e; font-size:12px; margin-left:12px }}
.panel {{ position:absolute; background:#181b1f; border:1px solid #2b2e35; border-radius:3px;
  padding:8px; box-sizing:border-box }}
.title {{ font-size:13px; font-weight:600; margin-bottom:6px; color:#ccccdc }}
.grid {{ stroke:#2b2e35; stroke-width:1 }}
.axis {{ fill:#8e8e9e; font-size:10px }}
.none {{ fill:#8e8e9e; font-size:14px; text-anchor:middle }}
.line {{ fill:none; stroke-width:1.6 }}
.legend {{ font-size:11px; margin-top:4px }}
.legend span {{ margin-right:12px; white-space:nowrap }}
.legend i {{ display:inline-block; width:12px; height:3px; margin-right:5px;
  vertical-align:middle }}
</style></head><body><div class="head">{html.escape(dashboard["title"])}
<small>drawn from {len(scrapes)} scrapes of a real gateway serve --workers 2, one per second;
rates over {window:g} s</small></div>{"".join(blocks)}</body></html>"""


def photograph(markup: str, out: Path, workdir: Path) -> None:
    source = workdir / "dashboard.html"
    source.write_text(markup)
    height = int(re.search(r"height:([0-9.]+)px; position:relative", markup).group(1))
    subprocess.run(
        [
            "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--screenshot={out}", f"--window-size={WIDTH},{height}", source.as_uri(),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=120, help="length of the run (120)")
    parser.add_argument("--window", type=float, default=15, help="rate window, seconds (15)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "grafana-dashboard.png")
    args = parser.parse_args()
    dashboard = json.loads(DASHBOARD.read_text())
    with tempfile.TemporaryDirectory(prefix="dashboard-picture-") as tmp:
        scrapes = record(args.seconds, Path(tmp))
        photograph(page(dashboard, scrapes, args.window), args.out, Path(tmp))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
