"""The keys of each file kind: types, sets, ranges, cross-field rules and references."""

from __future__ import annotations

import pytest

from tests.factory_format.support import MINIMAL, codes, parse_with, where

FACTORY = MINIMAL["factory.yaml"]


def factory(extra: str = "", *, replace: tuple[str, str] | None = None) -> dict[str, str]:
    text = FACTORY.replace(*replace) if replace else FACTORY
    return {"factory.yaml": text + extra}


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (factory("colour: red\n"), [("factory.yaml", 9, 1, "FF_UNKNOWN_FIELD")]),
        (factory(replace=("schemaVersion: v1alpha1\n", "")), []),
        (
            factory(replace=("name: demo", "name: '  '")),
            [("factory.yaml", 2, 7, "FF_INVALID_VALUE")],
        ),
        (factory("alias: ' On-Prem '\n"), []),
        (factory("alias: 'a@b'\n"), [("factory.yaml", 9, 8, "FF_INVALID_VALUE")]),
        (factory("alias: " + "a" * 61 + "\n"), [("factory.yaml", 9, 8, "FF_INVALID_VALUE")]),
        (factory("credentialStrategy: CREATOR\n"), []),
        (factory("credentialStrategy: null\n"), []),
        (factory("credentialStrategy: creator\n"), [("factory.yaml", 9, 21, "FF_INVALID_VALUE")]),
        (
            factory(
                "  - owner: ACME\n    name: API\n",
                replace=("agentDefaults:\n  model: auto\n  runner: small\n", ""),
            )
            | {
                "factory.yaml": FACTORY.replace(
                    "    name: api\n", "    name: api\n  - owner: ACME\n    name: API\n"
                )
            },
            [("factory.yaml", 6, 5, "FF_DUPLICATE_VALUE")],
        ),
        (
            factory(
                replace=("repositories:\n  - owner: acme\n    name: api\n", "repositories: []\n")
            ),
            [("factory.yaml", 3, 15, "FF_INVALID_VALUE")],
        ),
        (
            factory(replace=("    name: api\n", "    name: api\n    url: x\n")),
            [("factory.yaml", 6, 5, "FF_UNKNOWN_FIELD")],
        ),
        (factory("secrets: [A, B, A]\n"), [("factory.yaml", 9, 17, "FF_DUPLICATE_VALUE")]),
        (factory("mcpServers:\n  docs: {warpId: m1}\n"), []),
        (
            factory("mcpServers:\n  docs: {url: x}\n"),
            [("factory.yaml", 10, 3, "FF_INVALID_MCP"), ("factory.yaml", 10, 10, "FF_INVALID_MCP")],
        ),
        (factory("mcpServers:\n  docs: m1\n"), [("factory.yaml", 10, 9, "FF_INVALID_MCP")]),
        (factory("mcpServers: [m1]\n"), [("factory.yaml", 9, 13, "FF_INVALID_MCP")]),
        (
            factory("integrations: [{type: slack}, {type: github}]\n"),
            [("factory.yaml", 9, 38, "FF_INVALID_VALUE")],
        ),
        (
            factory("integrations: [{type: linear}, {type: jira}]\n"),
            [("factory.yaml", 9, 39, "FF_CONFLICTING_FIELDS")],
        ),
        (
            factory("integrations: [{type: slack}, {type: slack}]\n"),
            [("factory.yaml", 9, 38, "FF_DUPLICATE_VALUE")],
        ),
        (
            factory(
                "integrations:\n  - type: microsoft-teams\n    microsoft-teams:\n"
                "      autoRespondToThreadReplies: false\n"
            ),
            [],
        ),
        (
            factory("integrations:\n  - type: slack\n    microsoft-teams: {}\n"),
            [("factory.yaml", 11, 5, "FF_CONFLICTING_FIELDS")],
        ),
        (factory("integrations: []\n"), []),
        (
            factory("cloudProviders:\n  gcp:\n    projectNumber: 1234\n"),
            [
                ("factory.yaml", 10, 3, "FF_MISSING_FIELD"),
                ("factory.yaml", 10, 3, "FF_MISSING_FIELD"),
                ("factory.yaml", 11, 20, "FF_INVALID_TYPE"),
            ],
        ),
        (factory("cloudProviders:\n  aws: {roleArn: 'arn:aws:iam::1:role/x'}\n"), []),
        (factory("codeForges: [GITHUB]\n"), []),
        (factory("codeForges: [BITBUCKET]\n"), [("factory.yaml", 9, 14, "FF_INVALID_VALUE")]),
        (factory(replace=("  model: auto\n", "")), [("factory.yaml", 7, 3, "FF_MISSING_FIELD")]),
        (factory(replace=("  runner: small\n", "")), [("factory.yaml", 7, 3, "FF_MISSING_FIELD")]),
        (
            factory(replace=("  runner: small\n", "  environmentId: env_1\n")),
            [("runners/small.yaml", None, None, "unused")][:0],
        ),
        (
            factory(
                replace=("  model: auto\n", "  model: auto\n  harness: {type: oz, model: x}\n")
            ),
            [("factory.yaml", 8, 3, "FF_CONFLICTING_FIELDS")],
        ),
        (
            factory(replace=("  model: auto\n", "  harness: {type: codex}\n")),
            [("factory.yaml", 7, 3, "FF_MISSING_FIELD")],
        ),
        (
            factory(
                replace=(
                    "  model: auto\n",
                    "  harness: {type: codex, model: gpt, reasoningLevel: "
                    "high, auth: {source: managedSecret}}\n",
                )
            ),
            [("factory.yaml", 7, 67, "FF_MISSING_FIELD")],
        ),
        (
            factory(
                replace=("  model: auto\n", "  harness: {type: oz, model: a, reasoningLevel: x}\n")
            ),
            [("factory.yaml", 7, 33, "FF_INVALID_HARNESS")],
        ),
        (factory("extra: [\n"), [("factory.yaml", 10, 1, "FF_YAML_SYNTAX")]),
    ],
)
def test_factory_yaml(files: dict[str, str], expected: list[tuple[str, int, int, str]]) -> None:
    result = parse_with(files)
    assert where(result) == expected
    assert result.ok == (not expected)


def test_an_unknown_schema_version_stops_everything_else() -> None:
    files = {
        **factory("colour: red\n", replace=("v1alpha1", "v1beta7")),
        "runners/small.yaml": "bad: [\n",
    }
    result = parse_with(files)
    assert where(result) == [("factory.yaml", 1, 16, "FF_UNSUPPORTED_VERSION")]


def test_factory_model() -> None:
    files = factory(
        "alias: ' Acme Ops '\nsecrets: [S1]\nmcpServers: {docs: {warpId: m1}}\n"
        "providers: {aws: {roleArn: old}}\ncloudProviders: {aws: {roleArn: new}}\n"
    )
    tree = parse_with(files).tree
    assert tree is not None
    made = tree.factory
    assert (made.alias, made.secrets, made.mcp_servers) == ("Acme Ops", ("S1",), {"docs": "m1"})
    assert made.cloud_providers is not None and made.cloud_providers.aws is not None
    assert made.cloud_providers.aws.role_arn == "new"  # cloudProviders wins over providers
    assert made.integrations is None and made.credential_strategy is None  # left alone
    assert made.schema_version == "v1alpha1"


AGENT = "agents/boss/agent.md"


@pytest.mark.parametrize(
    ("front", "expected"),
    [
        ("agentType: MAIN\n", []),
        ("agentType: FOREMAN\nagentType: MAIN\n", [(AGENT, 3, 1, "FF_DUPLICATE_KEY")]),
        ("agentType: FOREMAN\nmodel: ''\n", [(AGENT, 3, 8, "FF_INVALID_VALUE")]),
        ("agentType: FOREMAN\nmodel: null\nrunner: null\nenvironmentId: null\n", []),
        ("agentType: FOREMAN\nworkerHost: ''\nsecrets: []\nmcpServers: {}\n", []),
        ("agentType: FOREMAN\nharness: {}\n", [(AGENT, 3, 10, "FF_INVALID_HARNESS")]),
        ("agentType: FOREMAN\nharness: {type: claude-code, model: opus}\n", []),
        ("agentType: FOREMAN\nharness: {type: gpt}\n", [(AGENT, 3, 17, "FF_INVALID_VALUE")]),
        (
            "agentType: FOREMAN\n"
            "harness: {type: oz, auth: {source: managedSecret, secretName: k}}\n",
            [(AGENT, 3, 21, "FF_INVALID_HARNESS")],
        ),
        (
            "agentType: FOREMAN\nharness: {type: codex, model: m, auth: {source: workerEnvironment,"
            " secretName: k}}\nworkerHost: w1\n",
            [(AGENT, 3, 68, "FF_CONFLICTING_FIELDS")],
        ),
        (
            "agentType: FOREMAN\ncredentialStrategy: CREATOR\ndescription: 3\n",
            [(AGENT, 4, 14, "FF_INVALID_TYPE")],
        ),
        ("agentType: FOREMAN\nsecrets: token\n", [(AGENT, 3, 10, "FF_INVALID_TYPE")]),
    ],
)
def test_agent_frontmatter(front: str, expected: list[tuple[str, int, int, str]]) -> None:
    result = parse_with({AGENT: f"---\n{front}---\nLead.\n"})
    assert where(result) == expected


def test_exactly_one_foreman() -> None:
    none = parse_with({AGENT: "---\nagentType: CUSTOM\n---\n"})
    assert where(none) == [(".", None, None, "FF_FOREMAN")]
    two = parse_with({"agents/other/agent.md": "---\nagentType: MAIN\n---\n"})
    assert where(two) == [
        (AGENT, 2, 12, "FF_FOREMAN"),
        ("agents/other/agent.md", 2, 12, "FF_FOREMAN"),
    ]
    # a foreman that does not parse is not reported missing as well
    broken = parse_with({AGENT: "---\nagentType: FOREMAN\nx: [\n---\n"})
    assert codes(broken) == ["FF_YAML_SYNTAX"]


RUNNER = "runners/small.yaml"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "platform: {os: macos, mac: {version: '15'}}\n"
            "instanceShape: {vcpus: 6, memoryGb: 14}\n",
            [],
        ),
        (
            "platform: {os: macos}\ninstanceShape: {vcpus: 6, memoryGb: 16}\n",
            [(RUNNER, 2, 16, "FF_INVALID_VALUE")],
        ),
        ("platform: {os: macos, arch: x86_64}\n", [(RUNNER, 1, 29, "FF_INVALID_VALUE")]),
        (
            "platform: {os: macos, linux: {dockerImage: u}}\n",
            [(RUNNER, 1, 30, "FF_CONFLICTING_FIELDS")],
        ),
        (
            "platform: {linux: {dockerImage: u}, mac: {version: '26'}}\n",
            [(RUNNER, 1, 42, "FF_CONFLICTING_FIELDS")],
        ),
        ("description: no platform\n", [(RUNNER, 1, 1, "FF_MISSING_FIELD")]),
        ("platform: {arch: aarch64}\n", [(RUNNER, 1, 11, "FF_MISSING_FIELD")]),
        (
            "platform: {linux: {dockerImage: u}}\ninstanceShape: {vcpus: 3, memoryGb: 12}\n",
            [(RUNNER, 2, 24, "FF_INVALID_VALUE"), (RUNNER, 2, 37, "FF_INVALID_VALUE")],
        ),
        (
            "platform: {linux: {dockerImage: u}}\ninstanceShape: {vcpus: 4}\n",
            [(RUNNER, 2, 1, "FF_MISSING_FIELD")],
        ),
        (
            "platform: {linux: {dockerImage: u}}\ninstanceShape: {vcpus: '4', memoryGb: 8}\n",
            [(RUNNER, 2, 24, "FF_INVALID_TYPE")],
        ),
        ("platform: {os: macos, mac: {version: 26}}\n", [(RUNNER, 1, 38, "FF_INVALID_VALUE")]),
        ("platform: {os: windows}\n", [(RUNNER, 1, 16, "FF_INVALID_VALUE")]),
        (
            "platform: {linux: {dockerImage: u}}\nsetupCommands: make\n",
            [(RUNNER, 2, 16, "FF_INVALID_TYPE")],
        ),
    ],
)
def test_runners(text: str, expected: list[tuple[str, int, int, str]]) -> None:
    assert where(parse_with({RUNNER: text})) == expected


def test_runner_model_defaults() -> None:
    tree = parse_with({"runners/mac.yaml": "platform: {os: macos}\n"}).tree
    assert tree is not None
    mac = next(r for r in tree.runners if r.name == "mac").platform
    assert (mac.os, mac.arch, mac.mac_version, mac.docker_image) == ("macos", "aarch64", "26", None)
    small = next(r for r in tree.runners if r.name == "small").platform
    assert (small.os, small.arch, small.mac_version) == ("linux", "x86_64", None)


SCORER = "scorers/quality/scorer.md"
GOOD_SCORER = (
    "agents: [boss]\nlabels:\n  - {value: good, score: 1}\n  - {value: bad, score: 0}\n"
    "passingScore: 1\nmodel: claude-4-5-haiku\n"
)


@pytest.mark.parametrize(
    ("front", "body", "expected"),
    [
        (GOOD_SCORER, "Judge.\n", []),
        (GOOD_SCORER + "name: quality\nenabled: false\noutput: classification\n", "J\n", []),
        (GOOD_SCORER + "name: other\n", "J\n", [(SCORER, 8, 7, "FF_INVALID_VALUE")]),
        (GOOD_SCORER, "  \n", [(SCORER, 2, 1, "FF_EMPTY_BODY")]),
        (
            GOOD_SCORER.replace("[boss]", "[boss, ghost]"),
            "J\n",
            [(SCORER, 2, 16, "FF_INVALID_REFERENCE")],
        ),
        (
            GOOD_SCORER.replace("score: 0}", "score: 1}"),
            "J\n",
            [(SCORER, 6, 15, "FF_INVALID_VALUE")],
        ),
        (
            GOOD_SCORER.replace("value: bad", "value: good"),
            "J\n",
            [(SCORER, 5, 13, "FF_DUPLICATE_VALUE")],
        ),
        (
            GOOD_SCORER.replace("score: 0}", "score: 2}"),
            "J\n",
            [(SCORER, 5, 25, "FF_INVALID_VALUE")],
        ),
        (GOOD_SCORER + "samplingRate: 0\n", "J\n", [(SCORER, 8, 15, "FF_INVALID_VALUE")]),
        (
            GOOD_SCORER.replace("model: claude-4-5-haiku\n", ""),
            "J\n",
            [(SCORER, 2, 1, "FF_MISSING_FIELD")],
        ),
        (GOOD_SCORER + "output: score\n", "J\n", [(SCORER, 8, 9, "FF_INVALID_VALUE")]),
    ],
)
def test_scorers(front: str, body: str, expected: list[tuple[str, int, int, str]]) -> None:
    assert where(parse_with({SCORER: f"---\n{front}---\n{body}"})) == expected


WEBHOOK = "webhooks/hook.yaml"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("secretName: s\n", []),
        ("authMode: url_token\nsecretName: s\nenabled: false\n", []),
        ("authMode: signature\nsignatureScheme: standard-webhooks\nsecretName: s\n", []),
        (
            "authMode: signature\nsignatureScheme: vercel\nsecretName: s\ndeliveryIdHeader: X-Id\n",
            [],
        ),
        ("authMode: signature\nsecretName: s\n", [(WEBHOOK, 1, 1, "FF_MISSING_FIELD")]),
        ("signatureScheme: stripe\nsecretName: s\n", [(WEBHOOK, 1, 1, "FF_CONFLICTING_FIELDS")]),
        ("authMode: hmac\nsecretName: s\n", [(WEBHOOK, 1, 11, "FF_INVALID_VALUE")]),
        ("authMode: token\n", [(WEBHOOK, 1, 1, "FF_MISSING_FIELD")]),
        ("secretName: s\ndeliveryIdHeader: 'X Id'\n", [(WEBHOOK, 2, 19, "FF_INVALID_VALUE")]),
        ("name: hook\nsecretName: s\n", [(WEBHOOK, 1, 1, "FF_UNKNOWN_FIELD")]),
    ],
)
def test_webhooks(text: str, expected: list[tuple[str, int, int, str]]) -> None:
    assert where(parse_with({WEBHOOK: text})) == expected


def test_webhook_model_and_deferred_checks() -> None:
    files = {
        WEBHOOK: "authMode: signature\nsignatureScheme: standard-webhooks\nsecretName: s\n"
        "deliveryIdHeader: X-Event-Id\n"
    }
    tree = parse_with(files).tree
    assert tree is not None
    [hook] = tree.webhooks
    assert (hook.name, hook.signature_scheme, hook.enabled) == ("hook", "standard_webhooks", True)
    deferred = {(r.kind, r.value) for r in tree.deferred_references}
    assert {("secret", "s"), ("delivery_id_header", "X-Event-Id")} <= deferred


def test_too_many_webhooks() -> None:
    files = {f"webhooks/h{i:02}.yaml": "secretName: s\n" for i in range(21)}
    assert where(parse_with(files)) == [(".", None, None, "FF_LIMIT_EXCEEDED")]


SUITE = "benchmarks/smoke/suite.yaml"
TASK = "title: Log in\nprompt: Log in.\nsuccessCriteria: The user is logged in.\n"


def test_benchmarks() -> None:
    ref = "github.com:acme/api@" + "a" * 40
    files = {
        SUITE: "name: Smoke\nagent: boss\ntasks: [login, logout]\n",
        "benchmarks/smoke/tasks/login.yaml": TASK + f"startingRepoRefs: ['{ref}']\n",
        "benchmarks/smoke/tasks/logout.yaml": TASK,
    }
    tree = parse_with(files).tree
    assert tree is not None
    [suite] = tree.benchmark_suites
    assert (suite.slug, suite.name, [t.slug for t in suite.tasks]) == (
        "smoke",
        "Smoke",
        ["login", "logout"],
    )
    assert suite.tasks[0].starting_repo_refs == (ref,)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({SUITE: "name: S\nagent: ghost\n"}, [(SUITE, 2, 8, "FF_INVALID_REFERENCE")]),
        ({SUITE: "name: S\nagent: boss\ntasks: [a]\n"}, [(SUITE, 3, 9, "FF_INVALID_REFERENCE")]),
        (
            {SUITE: "name: S\nagent: boss\n", "benchmarks/smoke/tasks/a.yaml": TASK},
            [(SUITE, 1, 1, "FF_INVALID_REFERENCE")],
        ),
        (
            {SUITE: "name: S\nagent: boss\ntasks: [a, a]\n", "benchmarks/smoke/tasks/a.yaml": TASK},
            [(SUITE, 3, 12, "FF_DUPLICATE_VALUE")],
        ),
        (
            {"benchmarks/x/tasks/a.yaml": TASK},
            [("benchmarks/x/suite.yaml", None, None, "FF_INVALID_REFERENCE")],
        ),
        (
            {
                SUITE: "name: S\nagent: boss\n",
                "benchmarks/other/suite.yaml": "name: S\nagent: boss\n",
            },
            [(SUITE, 1, 7, "FF_DUPLICATE_VALUE")],
        ),
        (
            {
                SUITE: "name: S\nagent: boss\ntasks: [a]\n",
                "benchmarks/smoke/tasks/a.yaml": "title: T\nprompt: P\nsuccessCriteria: C\n"
                "startingRepoRefs: ['acme/api@main']\n",
            },
            [("benchmarks/smoke/tasks/a.yaml", 4, 20, "FF_INVALID_VALUE")],
        ),
    ],
)
def test_benchmark_problems(
    files: dict[str, str], expected: list[tuple[str, int, int, str]]
) -> None:
    assert where(parse_with(files)) == expected


def test_skills() -> None:
    files = {
        "skills/conventions/SKILL.md": "---\nname: Conventions\nlicense: MIT\n---\nBe kind.\n",
        "agents/boss/skills/deploy/SKILL.md": "---\ndescription: How to deploy\n---\nRun it.\n",
    }
    tree = parse_with(files).tree
    assert tree is not None
    shared, own = sorted(tree.skills, key=lambda s: s.agent or "")
    assert (shared.name, shared.title, shared.frontmatter, shared.playbook) == (
        "conventions",
        "Conventions",
        {"license": "MIT"},
        "Be kind.\n",
    )
    assert (own.agent, own.title, own.description) == ("boss", "deploy", "How to deploy")
    assert tree.agents[0].skills == ("deploy",)
    orphan = parse_with({"agents/ghost/skills/x/SKILL.md": "---\n---\n"})
    assert where(orphan) == [("agents/ghost/skills/x/SKILL.md", 2, 1, "FF_INVALID_REFERENCE")]


AUTOMATION = "automations/job/automation.md"
TRIGGERS = "triggers:\n  - provider: slack\n    event: app_mention\n"


@pytest.mark.parametrize(
    ("front", "body", "expected"),
    [
        (TRIGGERS, "Go\n", []),
        ("enabled: false\nagent: boss\nmodel: auto-genius\nrunner: big\n" + TRIGGERS, "Go\n", []),
        ("agent: ghost\n" + TRIGGERS, "Go\n", [(AUTOMATION, 2, 8, "FF_INVALID_REFERENCE")]),
        (TRIGGERS, "\n\n", [(AUTOMATION, 2, 1, "FF_EMPTY_BODY")]),
        ("triggers: []\n", "Go\n", [(AUTOMATION, 2, 11, "FF_INVALID_VALUE")]),
        ("enabled: yes\n" + TRIGGERS, "Go\n", [(AUTOMATION, 2, 10, "FF_INVALID_TYPE")]),
        ("prompt: Go\n" + TRIGGERS, "Go\n", [(AUTOMATION, 2, 1, "FF_UNKNOWN_FIELD")]),
        ("name: job\n" + TRIGGERS, "Go\n", [(AUTOMATION, 2, 1, "FF_UNKNOWN_FIELD")]),
        ("", "Go\n", [(AUTOMATION, 2, 1, "FF_MISSING_FIELD")]),
        ("triggers:\n  - provider: slack\n", "Go\n", [(AUTOMATION, 3, 5, "FF_INVALID_TRIGGER")]),
    ],
)
def test_automations(front: str, body: str, expected: list[tuple[str, int, int, str]]) -> None:
    assert where(parse_with({AUTOMATION: f"---\n{front}---\n{body}"})) == expected


def test_a_runner_not_in_the_tree_is_a_deferred_reference() -> None:
    result = parse_with({AUTOMATION: f"---\nrunner: team-runner\n{TRIGGERS}---\nGo\n"})
    assert result.tree is not None
    runners = [
        (r.value, r.path, r.line) for r in result.tree.deferred_references if r.kind == "runner"
    ]
    assert runners == [("team-runner", AUTOMATION, 2)]  # `small` is in the tree: not deferred
