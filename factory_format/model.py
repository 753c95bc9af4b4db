"""The typed model of a parsed tree: frozen Structs, one per resource, with defaults filled,
aliases made canonical (MAIN -> FOREMAN, claude-code -> claude, standard-webhooks ->
standard_webhooks) and inheritance resolved (`effective`). `compare.comparable` turns any
resource into the plain, ordered form that apply stores and diffs."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import UNSET, Struct, UnsetType, field

from .triggers.model import Trigger

__all__ = [
    "Agent",
    "AgentType",
    "Automation",
    "BenchmarkSuite",
    "BenchmarkTask",
    "CloudProviders",
    "DeferredReference",
    "EffectiveConfig",
    "EffectiveHarness",
    "Factory",
    "FactoryTree",
    "HarnessAuth",
    "HarnessLayer",
    "Integration",
    "Repository",
    "Resource",
    "ResourceKey",
    "RunConfig",
    "Runner",
    "RunnerPlatform",
    "Scorer",
    "ScorerLabel",
    "Skill",
    "Webhook",
]

AgentType = Literal["CUSTOM", "FOREMAN", "TRIAGE", "SPEC", "IMPLEMENT", "REVIEW", "VERIFY"]
HarnessType = Literal["oz", "claude", "codex", "gemini"]
CredentialStrategy = Literal["EXECUTOR", "CREATOR"]


class _Frozen(Struct, frozen=True, kw_only=True, omit_defaults=True):
    pass


class HarnessAuth(_Frozen, frozen=True, kw_only=True):
    source: Literal["managedSecret", "workerEnvironment"]
    secret_name: str | None = None


class HarnessLayer(_Frozen, frozen=True, kw_only=True):
    """A harness as one layer declares it. `model: X` is stored as {type: oz, model: X}.
    `reasoning_level` None clears an inherited level."""

    type: HarnessType | UnsetType = UNSET
    model: str | UnsetType = UNSET
    reasoning_level: str | UnsetType | None = UNSET
    auth: HarnessAuth | UnsetType = UNSET


class RunConfig(_Frozen, frozen=True, kw_only=True):
    """What one layer (agentDefaults, an agent, an automation) declares; UNSET inherits.
    `worker_host` None clears an inherited host."""

    harness: HarnessLayer | UnsetType = UNSET
    runner: str | UnsetType = UNSET
    environment_id: str | UnsetType = UNSET
    secrets: tuple[str, ...] | UnsetType = UNSET
    mcp_servers: dict[str, str] | UnsetType = UNSET  # name -> warpId
    worker_host: str | UnsetType | None = UNSET


class EffectiveHarness(_Frozen, frozen=True, kw_only=True):
    type: HarnessType
    model: str
    reasoning_level: str | None = None
    auth: HarnessAuth | None = None


class EffectiveConfig(_Frozen, frozen=True, kw_only=True):
    """agentDefaults -> agent -> automation, resolved. `secrets` and `mcp_servers` are the
    factory-wide ones plus the innermost layer's (which replace the layers above it)."""

    harness: EffectiveHarness
    runner: str | None = None
    environment_id: str | None = None
    secrets: tuple[str, ...] = ()
    mcp_servers: dict[str, str] = field(default_factory=dict)
    worker_host: str | None = None
    credential_strategy: CredentialStrategy | None = None  # None: the factory's stored value


class Repository(_Frozen, frozen=True, kw_only=True):
    owner: str
    name: str


class Integration(_Frozen, frozen=True, kw_only=True):
    type: Literal["slack", "linear", "jira", "microsoft-teams"]
    auto_respond_to_thread_replies: bool | None = None  # microsoft-teams only


class GcpProvider(_Frozen, frozen=True, kw_only=True):
    project_number: str
    workload_identity_federation_pool_id: str
    workload_identity_federation_provider_id: str
    service_account_email: str | None = None


class AwsProvider(_Frozen, frozen=True, kw_only=True):
    role_arn: str


class CloudProviders(_Frozen, frozen=True, kw_only=True):
    gcp: GcpProvider | None = None
    aws: AwsProvider | None = None


class Factory(_Frozen, frozen=True, kw_only=True):
    """`credential_strategy` and `integrations` None: left out of the file, so apply leaves
    the stored value alone (`integrations == ()` detaches all)."""

    path: str = "factory.yaml"
    schema_version: str
    name: str
    description: str | None = None
    alias: str | None = None
    credential_strategy: CredentialStrategy | None = None
    repositories: tuple[Repository, ...]
    secrets: tuple[str, ...] = ()
    mcp_servers: dict[str, str] = field(default_factory=dict)
    cloud_providers: CloudProviders | None = None
    integrations: tuple[Integration, ...] | None = None
    agent_defaults: RunConfig
    code_forges: tuple[Literal["GITHUB", "GITLAB"], ...] | None = None


class Agent(_Frozen, frozen=True, kw_only=True):
    name: str
    path: str
    description: str | None = None
    agent_type: AgentType = "CUSTOM"
    credential_strategy: CredentialStrategy | None = None
    config: RunConfig = RunConfig()
    prompt: str
    skills: tuple[str, ...] = ()  # its own skills (agents/<name>/skills/...)
    effective: EffectiveConfig


class Automation(_Frozen, frozen=True, kw_only=True):
    name: str
    path: str
    enabled: bool = True
    agent: str  # the declared agent, or the FOREMAN agent when the file names none
    triggers: tuple[Trigger, ...]
    config: RunConfig = RunConfig()
    prompt: str
    effective: EffectiveConfig


class InstanceShape(_Frozen, frozen=True, kw_only=True):
    vcpus: int
    memory_gb: int


class RunnerPlatform(_Frozen, frozen=True, kw_only=True):
    os: Literal["linux", "macos"] = "linux"
    arch: Literal["x86_64", "aarch64"] = "x86_64"
    docker_image: str | None = None
    registry_credential_secret_name: str | None = None
    mac_version: str | None = None  # macOS only, "26" when left out


class Runner(_Frozen, frozen=True, kw_only=True):
    name: str
    path: str
    description: str | None = None
    setup_commands: tuple[str, ...] = ()
    instance_shape: InstanceShape | None = None
    platform: RunnerPlatform


class ScorerLabel(_Frozen, frozen=True, kw_only=True):
    value: str
    score: float
    description: str | None = None


class Scorer(_Frozen, frozen=True, kw_only=True):
    name: str
    path: str
    description: str | None = None
    agents: tuple[str, ...]
    enabled: bool = True
    output: Literal["classification"] = "classification"
    labels: tuple[ScorerLabel, ...]
    passing_score: float
    sampling_rate: float = 25.0
    model: str
    self_improvement: bool = False
    rubric: str


class Skill(_Frozen, frozen=True, kw_only=True):
    """`name` is the skill's directory under skills/ (or agents/<agent>/skills/); `agent` the
    agent it belongs to, None for a factory-wide skill."""

    name: str
    path: str
    agent: str | None = None
    title: str  # frontmatter `name`, else the directory name
    description: str | None = None
    frontmatter: dict[str, Any] = field(default_factory=dict)  # other keys, kept as written
    playbook: str
    # the other text files of its directory, by path under it (scripts, references): handed to
    # the runs that may use the skill; stored with it and compared by plans
    files: dict[str, str] | UnsetType = UNSET


class Webhook(_Frozen, frozen=True, kw_only=True):
    name: str
    path: str
    auth_mode: Literal["token", "url_token", "signature"] = "token"
    signature_scheme: str | None = None
    secret_name: str
    delivery_id_header: str | None = None
    enabled: bool = True


class BenchmarkTask(_Frozen, frozen=True, kw_only=True):
    slug: str
    path: str
    title: str
    prompt: str
    success_criteria: str
    source_run_id: str | None = None
    starting_repo_refs: tuple[str, ...] = ()


class BenchmarkSuite(_Frozen, frozen=True, kw_only=True):
    slug: str  # its directory
    path: str
    name: str
    description: str | None = None
    agent: str
    tasks: tuple[BenchmarkTask, ...] = ()


DeferredKind = Literal[
    "model",
    "harness_model",
    "secret",
    "runner",
    "environment",
    "worker_host",
    "mcp_server",
    "webhook",
    "schedule",
    "provider_name",
    "delivery_id_header",
    "alias",
]


class DeferredReference(_Frozen, frozen=True, kw_only=True):
    """Something only the server can check, and where the tree names it: a model id, a
    secret, a runner not declared in the tree, a webhook UID, a Linear team name (`detail`
    says which provider key, or which harness a harness model is for)..."""

    kind: DeferredKind
    value: str
    path: str
    line: int | None
    column: int | None
    detail: str = ""


Resource = Factory | Agent | Automation | Runner | Scorer | Skill | Webhook | BenchmarkSuite
ResourceKey = tuple[str, str]
"""(kind, name): ("agent", "foreman"), ("skill", "repository-conventions"),
("agent_skill", "implementer/testing-standards"), ("factory", "")."""


class FactoryTree(_Frozen, frozen=True, kw_only=True):
    schema_version: str
    factory: Factory
    agents: tuple[Agent, ...]
    automations: tuple[Automation, ...] = ()
    runners: tuple[Runner, ...] = ()
    scorers: tuple[Scorer, ...] = ()
    skills: tuple[Skill, ...] = ()
    webhooks: tuple[Webhook, ...] = ()
    benchmark_suites: tuple[BenchmarkSuite, ...] = ()
    deferred_references: tuple[DeferredReference, ...] = ()

    def resources(self) -> dict[ResourceKey, Resource]:
        """Every resource by its identity; what apply matches stored resources against."""
        found: dict[ResourceKey, Resource] = {("factory", ""): self.factory}
        for kind, items in (
            ("agent", self.agents),
            ("automation", self.automations),
            ("runner", self.runners),
            ("scorer", self.scorers),
            ("webhook", self.webhooks),
        ):
            for item in items:
                found[(kind, item.name)] = item
        for skill in self.skills:
            key = (
                ("agent_skill", f"{skill.agent}/{skill.name}")
                if skill.agent
                else ("skill", skill.name)
            )
            found[key] = skill
        for suite in self.benchmark_suites:
            found[("benchmark_suite", suite.slug)] = suite
        return found
