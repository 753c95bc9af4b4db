"""Provider-trigger benchmark: the CPU of normalizing one delivery and matching its events.

    python -m benchmarks.providers_bench [--quick]

Prints JSON: microseconds per delivery to normalize a GitHub ``issues.labeled`` payload (from
@octokit/webhooks-examples, installed by scripts/npm-packages) and to match its events against
10 factories x 10 automations of ``github issue_labeled`` triggers filtered on repos and
labels; and the same for a Slack ``message.channels`` payload with keyword filters. The
payload is already parsed (parsing the body is not part of normalizing).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.webhook_gateway.providers import EventMatcher, compile_trigger_filter, normalize

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "tests/node_modules/@octokit/webhooks-examples/api.github.com/index.json"
SLACK = ROOT / "tests/fixtures/providers/slack/message_channels.json"


def _github_payload() -> dict[str, Any]:
    subprocess.run(["bash", str(ROOT / "scripts/npm-packages")], check=True)
    catalogue = {e["name"]: e["examples"] for e in json.loads(EXAMPLES.read_text())}
    payload: dict[str, Any] = next(e for e in catalogue["issues"] if e["action"] == "labeled")
    return payload


def _matchers(provider: str, filters: list[dict[str, Any]]) -> list[EventMatcher]:
    return [compile_trigger_filter(provider, f) for f in filters]


def _per_delivery_us(
    provider: str,
    headers: dict[str, str],
    payload: Any,
    matchers: list[EventMatcher],
    rounds: int,
) -> tuple[float, int]:
    def once() -> int:
        hits = 0
        for event in normalize(provider, headers, payload):
            for matcher in matchers:
                hits += matcher(event)
        return hits

    hits = once()
    start = time.process_time()
    for _ in range(rounds):
        once()
    return (time.process_time() - start) / rounds * 1e6, hits


def _time(fn: Callable[[], Any], rounds: int) -> float:
    start = time.process_time()
    for _ in range(rounds):
        fn()
    return (time.process_time() - start) / rounds * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    rounds = 2_000 if parser.parse_args().quick else 20_000

    github = _github_payload()
    github_headers = {"x-github-event": "issues"}
    github_filters = [
        {"repos": [f"org{f}/repo", "Codertocat/Hello-World"], "labels": [f"label-{a}", "bug"]}
        for f in range(10)
        for a in range(10)
    ]
    slack = json.loads(SLACK.read_text())
    slack_filters = [
        {"channel_ids": ["C123ABC456"], "keywords": [f"word{a}", "prospect"]} for a in range(100)
    ]
    github_us, github_hits = _per_delivery_us(
        "github", github_headers, github, _matchers("github", github_filters), rounds
    )
    slack_us, slack_hits = _per_delivery_us(
        "slack", {}, slack, _matchers("slack", slack_filters), rounds
    )
    print(
        json.dumps(
            {
                "github_issue_labeled": {
                    "normalize_us": round(
                        _time(lambda: normalize("github", github_headers, github), rounds), 2
                    ),
                    "normalize_and_match_100_us": round(github_us, 2),
                    "matched": github_hits,
                },
                "slack_message_posted": {
                    "normalize_us": round(_time(lambda: normalize("slack", {}, slack), rounds), 2),
                    "normalize_and_match_100_us": round(slack_us, 2),
                    "matched": slack_hits,
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
