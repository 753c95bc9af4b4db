"""Hypothesis strategies: valid factory trees, written as the files a user would commit."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import strategies as st

from factory_format.triggers import CATALOGUE, EventSpec, FilterKey

WORD = st.from_regex(r"[a-z][a-z0-9-]{0,11}", fullmatch=True)
CRONS = ["0 9 * * 1", "@daily", "@every 2h", "*/15 * * * MON-FRI", "30 3 1,15 * *", "@hourly"]
MODELS = ["auto", "auto-genius", "auto-efficient", "claude-4-5-haiku"]


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump(value: dict[str, Any]) -> str:
    return yaml.dump(value, Dumper=_NoAliases, sort_keys=False, default_flow_style=False)


def markdown(front: dict[str, Any], body: str) -> str:
    return f"---\n{dump(front) if front else ''}---\n{body}"


def _value(draw: st.DrawFn, key: FilterKey) -> str | int:
    if key.value_type == "integer":
        return draw(st.integers(1, 10_000))
    if key.known_values:
        return draw(st.sampled_from(key.known_values))
    hint = key.pattern_hint
    if "owner/name" in hint:
        return f"{draw(WORD)}/{draw(WORD)}"
    if "UUID" in hint:
        return str(draw(st.uuids()))
    if "Slack channel" in hint:
        return "C" + draw(st.from_regex(r"[A-Z0-9]{8}", fullmatch=True))
    if "Slack user" in hint:
        return "U" + draw(st.from_regex(r"[A-Z0-9]{8}", fullmatch=True))
    if "Teams channel" in hint:
        return f"19:{draw(WORD)}@thread.tacv2"
    if "webhook UID" in hint:
        return "wh_" + draw(st.from_regex(r"[0-9a-f]{32}", fullmatch=True))
    return draw(WORD)


@st.composite
def matcher(draw: st.DrawFn, key: FilterKey, by_name: bool) -> Any:
    size = 1 if key.max_values == 1 else draw(st.integers(1, 3))
    values = (
        [_value(draw, key) for _ in range(size)]
        if not by_name
        else draw(st.lists(WORD, min_size=1, max_size=3))
    )
    if by_name:
        return values
    form = draw(st.sampled_from(["list", "in", "in_not_in"] if not key.in_only else ["list", "in"]))
    if form == "list":
        return values
    if form == "in":
        return {"in": values}
    excluded = [v for v in [_value(draw, key)] if v not in values]
    return {"in": values, "not_in": excluded} if excluded else {"in": values}


@st.composite
def trigger(draw: st.DrawFn, spec: EventSpec, schedule_name: str | None) -> dict[str, Any]:
    made: dict[str, Any] = {"provider": spec.provider, "event": spec.event}
    flt: dict[str, Any] = {}
    for key in spec.keys:
        if not key.required and not draw(st.booleans()):
            continue
        alias = next((a for a in spec.aliases if a.canonical == key.name), None)
        use_alias = alias is not None and draw(st.booleans())
        name = alias.name if use_alias and alias else key.name
        flt[name] = draw(matcher(key, bool(use_alias and alias and alias.by_name)))
    if spec.schedule:
        flt.pop("schedule_ids", None)
        if draw(st.booleans()):
            made["schedule"] = {"cron": draw(st.sampled_from(CRONS))}
            if schedule_name is not None:
                made["schedule"] = {"name": schedule_name, **made["schedule"]}
        else:
            flt["schedule_ids"] = [f"sched_{draw(WORD)}"]
    if spec.payload and draw(st.booleans()):
        flt["payload"] = {draw(WORD): [draw(WORD)]}
    if flt:
        made["filter"] = flt
    return made


EVENTS = [event for provider in CATALOGUE for event in provider.events]


@st.composite
def automation(draw: st.DrawFn, agents: list[str], runners: list[str]) -> str:
    specs = draw(st.lists(st.sampled_from(EVENTS), min_size=1, max_size=3))
    triggers = [draw(trigger(spec, f"s{i}")) for i, spec in enumerate(specs)]
    front: dict[str, Any] = {}
    if draw(st.booleans()):
        front["agent"] = draw(st.sampled_from(agents))
    if draw(st.booleans()):
        front["enabled"] = draw(st.booleans())
    if runners and draw(st.booleans()):
        front["runner"] = draw(st.sampled_from(runners))
    if draw(st.booleans()):
        front["model"] = draw(st.sampled_from(MODELS))
    front["triggers"] = triggers
    return markdown(front, "Do the work.\n")


@st.composite
def runner(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        doc: dict[str, Any] = {
            "platform": {"os": "linux", "linux": {"dockerImage": "ubuntu:24.04"}}
        }
        if draw(st.booleans()):
            doc["platform"]["arch"] = draw(st.sampled_from(["x86_64", "aarch64"]))
        if draw(st.booleans()):
            powers = st.sampled_from([1, 2, 4, 8, 16, 32])
            doc["instanceShape"] = {"vcpus": draw(powers), "memoryGb": draw(powers)}
    else:
        vcpus, memory = draw(st.sampled_from([(4, 7), (6, 14), (8, 14), (12, 28), (12, 56)]))
        doc = {
            "instanceShape": {"vcpus": vcpus, "memoryGb": memory},
            "platform": {"os": "macos", "mac": {"version": draw(st.sampled_from(["15", "26"]))}},
        }
    if draw(st.booleans()):
        doc = {"description": draw(WORD), **doc}
    return dump(doc)


@st.composite
def agent(draw: st.DrawFn, foreman: bool, runners: list[str]) -> str:
    front: dict[str, Any] = {}
    if draw(st.booleans()):
        front["description"] = draw(WORD)
    kinds = ["FOREMAN", "MAIN"] if foreman else ["CUSTOM", "TRIAGE", "SPEC", "IMPLEMENT", "REVIEW"]
    if foreman or draw(st.booleans()):
        front["agentType"] = draw(st.sampled_from(kinds))
    choice = draw(st.sampled_from(["none", "model", "harness"]))
    if choice == "model":
        front["model"] = draw(st.sampled_from(MODELS))
    elif choice == "harness":
        front["harness"] = {"type": "codex", "model": "gpt-5.3-codex", "reasoningLevel": "high"}
    if runners and draw(st.booleans()):
        front["runner"] = draw(st.sampled_from(runners))
    if draw(st.booleans()):
        front["secrets"] = draw(st.lists(WORD.map(str.upper), unique=True, max_size=2))
    return markdown(front, draw(st.sampled_from(["", "Lead.\n", "# Agent\n\nDo things.\n"])))


@st.composite
def trees(draw: st.DrawFn) -> dict[str, str]:
    runners = draw(st.lists(WORD, min_size=1, max_size=3, unique=True))
    agents = draw(st.lists(WORD, min_size=1, max_size=4, unique=True))
    files = {f"runners/{name}.yaml": draw(runner()) for name in runners}
    for index, name in enumerate(agents):
        files[f"agents/{name}/agent.md"] = draw(agent(index == 0, runners))
    for name in draw(st.lists(WORD, max_size=3, unique=True)):
        files[f"automations/{name}/automation.md"] = draw(automation(agents, runners))
    if draw(st.booleans()):
        files["scorers/quality/scorer.md"] = markdown(
            {
                "agents": [agents[0]],
                "labels": [{"value": "good", "score": 1}, {"value": "bad", "score": 0}],
                "passingScore": 0.5,
                "model": "claude-4-5-haiku",
            },
            "Judge.\n",
        )
    if draw(st.booleans()):
        files["webhooks/hook.yaml"] = dump(
            {
                "authMode": "signature",
                "signatureScheme": "standard_webhooks",
                "secretName": "HOOK_SECRET",
            }
        )
    repositories = draw(st.lists(st.tuples(WORD, WORD), min_size=1, max_size=3, unique=True))
    factory: dict[str, Any] = {
        "schemaVersion": "v1alpha1",
        "name": draw(WORD),
        "repositories": [{"owner": o, "name": n} for o, n in repositories],
        "agentDefaults": {
            "model": draw(st.sampled_from(MODELS)),
            "runner": draw(st.sampled_from(runners)),
        },
    }
    if draw(st.booleans()):
        factory["integrations"] = [
            {"type": t}
            for t in draw(st.sampled_from([[], ["slack"], ["slack", "linear"], ["jira"]]))
        ]
    files["factory.yaml"] = dump(factory)
    return files
