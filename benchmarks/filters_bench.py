"""Payload-filter benchmark: many-filter matcher vs per-filter compiled loop vs reference.

    python -m benchmarks.filters_bench [--quick]

Prints JSON. Exits non-zero (printing FAILED) if the three disagree on any matched set.
Payloads are already-parsed JSON (parsing the body is not part of matching).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from filters import (
    Filter,
    Matcher,
    MultiMatcher,
    compile_filter,
    compile_many,
    matches_reference,
    parse_filter,
)

COUNTS = (1, 10, 100, 1000, 10000)
ACTIONS = ["opened", "closed", "synchronize", "labeled", "edited", "reopened"]
LABELS = ["bug", "enhancement", "ui", "docs", "security", "good first issue"]


def _user(rng: random.Random, login: str) -> dict[str, Any]:
    return {
        "login": login,
        "id": rng.randrange(10**8),
        "type": "Bot" if login.endswith("[bot]") else "User",
        "site_admin": False,
        "html_url": f"https://github.com/{login}",
    }


def make_payload(rng: random.Random, target_bytes: int) -> dict[str, Any]:
    """A GitHub-like pull_request event of about ``target_bytes`` of JSON."""
    payload: dict[str, Any] = {
        "action": "opened",
        "number": 4242,
        "pull_request": {
            "id": rng.randrange(10**9),
            "number": 4242,
            "state": "open",
            "draft": False,
            "title": "Fix the widget",
            "user": _user(rng, "octocat"),
            "labels": [{"id": i, "name": name} for i, name in enumerate(["bug", "ui"])],
            "head": {"ref": "fix-widget", "sha": f"{rng.getrandbits(160):040x}"},
            "base": {"ref": "main", "sha": f"{rng.getrandbits(160):040x}"},
            "body": "",
        },
        "repository": {
            "id": rng.randrange(10**8),
            "full_name": "org/repo-123",
            "private": False,
            "owner": _user(rng, "org"),
            "topics": ["gateway", "webhooks"],
        },
        "sender": _user(rng, "octocat"),
        "installation": {"id": rng.randrange(10**7)},
        "commits": [],
    }
    while len(json.dumps(payload)) < target_bytes:
        payload["commits"].append(
            {
                "sha": f"{rng.getrandbits(160):040x}",
                "message": " ".join(rng.choice(LABELS) for _ in range(12)),
                "author": _user(rng, f"dev{rng.randrange(1000)}"),
                "files": [f"src/mod{rng.randrange(100)}.py" for _ in range(5)],
            }
        )
    return payload


def make_filters(rng: random.Random, count: int) -> dict[str, Filter | None]:
    """Equality-heavy: mostly action + repository.full_name; a few exists / not_in."""
    raws: dict[str, Any] = {}
    for i in range(count):
        repo = f"org/repo-{rng.randrange(max(count, 200))}"
        roll = i % 50
        if roll == 0:  # no equality condition: always fully checked
            raw: Any = {
                "pull_request": {"draft": {"exists": True}},
                "sender": {"login": {"not_in": ["dependabot[bot]"]}},
                "repository": {"private": {"not_in": [True]}},
            }
        elif roll == 1:
            raw = {"action": ["opened"], "pull_request": {"labels": {"name": [rng.choice(LABELS)]}}}
        elif roll == 2:
            raw = {"repository": {"full_name": [repo]}, "installation": {"exists": True}}
        else:
            raw = {"action": [rng.choice(ACTIONS)], "repository": {"full_name": [repo]}}
        raws[f"automation-{i}"] = raw
    if count >= 10:  # make sure the interesting one is there
        raws["automation-0"] = {"action": ["opened"], "repository": {"full_name": ["org/repo-123"]}}
    return {key: parse_filter(raw) for key, raw in raws.items()}


def _time(fn: Callable[[], object], budget: float) -> float:
    """Seconds per call (best of three rounds of about ``budget / 3`` seconds each)."""
    fn()
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed > budget / 10 or calls > 1_000_000:
            break
        calls *= 4
    best = elapsed / calls
    for _ in range(2):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def _row(seconds: float) -> dict[str, float]:
    return {"us_per_delivery": round(seconds * 1e6, 2), "deliveries_per_second": round(1 / seconds)}


def run(quick: bool) -> tuple[bool, dict[str, Any]]:
    rng = random.Random(20240501)
    budget = 0.1 if quick else 0.5
    payloads = {"1KB": make_payload(rng, 1000), "100KB": make_payload(rng, 100_000)}
    results: list[dict[str, Any]] = []
    ok = True
    for count in COUNTS:
        trees = make_filters(random.Random(count), count)
        multi = compile_many(trees)
        matchers = {key: compile_filter(tree) for key, tree in trees.items()}
        for size, payload in payloads.items():

            def many(p: Any = payload, multi: MultiMatcher[str] = multi) -> list[str]:
                return multi.match(p)

            def loop(p: Any = payload, ms: dict[str, Matcher] = matchers) -> list[str]:
                return [key for key, matcher in ms.items() if matcher(p)]

            def reference(p: Any = payload, ts: dict[str, Filter | None] = trees) -> list[str]:
                return [key for key, tree in ts.items() if matches_reference(tree, p)]

            matched = reference()
            if many() != matched or loop() != matched:
                ok = False
                results.append({"filters": count, "payload": size, "error": "disagreement"})
                continue
            times = {
                name: _time(fn, budget)
                for name, fn in (("many", many), ("loop", loop), ("reference", reference))
            }
            results.append(
                {
                    "filters": count,
                    "payload": size,
                    "payload_bytes": len(json.dumps(payload)),
                    "matched": len(matched),
                    "compiled_many": _row(times["many"]),
                    "compiled_loop": _row(times["loop"]),
                    "reference": _row(times["reference"]),
                    "speedup_many_vs_reference": round(times["reference"] / times["many"], 1),
                    "speedup_loop_vs_reference": round(times["reference"] / times["loop"], 1),
                }
            )
    report = {
        "benchmark": "filters",
        "python": sys.version.split()[0],
        "quick": quick,
        "correct": ok,
        "results": results,
    }
    return ok, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter timing runs")
    args = parser.parse_args(argv)
    ok, report = run(args.quick)
    if not ok:
        print("FAILED: matchers disagree")
        print(json.dumps([r for r in report["results"] if "error" in r], indent=2))
        return 1
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
