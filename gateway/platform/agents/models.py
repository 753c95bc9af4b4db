"""The shapes of the team's agents (/agent/identities), with the field names of the official
client's AgentResponse: what a caller asks for, the agent as every reader sees it, and the
defaults its runs start from."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.foundation.api.fields import Timestamp, unless_none
from gateway.foundation.store.rows import from_row
from gateway.kernel.types import JsonObject

AgentType = Literal["FOREMAN", "TRIAGE", "SPEC", "IMPLEMENT", "REVIEW", "VERIFY", "CUSTOM"]
CredentialStrategy = Literal["CREATOR", "EXECUTOR"]
Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\S")]
Setting = Annotated[str, Meta(max_length=2000)]
LongText = Annotated[str, Meta(max_length=100_000)]
McpServers = Annotated[
    dict[str, JsonObject],
    Meta(description="MCP server configurations by name, as in a run's config"),
]
SkillSpec = Annotated[str, Meta(max_length=500, description="owner/repo:skill-name or path")]


class SecretRef(Struct, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=200, description="a managed team secret")]


Skills = Annotated[list[SkillSpec], Meta(max_length=50)]
Secrets = Annotated[list[SecretRef], Meta(max_length=50)]


class AgentCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Name
    description: LongText | None = None
    prompt: Annotated[str, Meta(max_length=100_000, description="its runs' base prompt")] | None = (
        None
    )
    agent_type: AgentType | None = None
    base_model: Annotated[Setting, Meta(description="an enabled model of /agent/models")] | None = (
        None
    )
    environment_id: (
        Annotated[Setting, Meta(description="an environment of /agent/environments")] | None
    ) = None
    worker_host: Setting | None = None
    credential_strategy: CredentialStrategy | None = None
    factory_uid: (
        Annotated[Setting, Meta(description="a factory of the team the agent works for")] | None
    ) = None
    mcp_servers: McpServers | None = None
    skills: Skills | None = None
    secrets: Secrets | None = None


class AgentUpdate(Struct, kw_only=True, forbid_unknown_fields=True):
    """Absent or null: unchanged; "" clears a text field, [] a list, {} the MCP servers."""

    name: Name | UnsetType = UNSET
    description: LongText | UnsetType | None = UNSET
    prompt: LongText | UnsetType | None = UNSET
    agent_type: AgentType | UnsetType | None = UNSET
    base_model: Setting | UnsetType | None = UNSET
    environment_id: Setting | UnsetType | None = UNSET
    worker_host: Setting | UnsetType | None = UNSET
    credential_strategy: CredentialStrategy | UnsetType | None = UNSET
    mcp_servers: McpServers | UnsetType = UNSET
    skills: Skills | UnsetType | None = UNSET
    secrets: Secrets | UnsetType | None = UNSET


class RunDefaults(Struct, kw_only=True, omit_defaults=True):
    """What the agent's runs start from, kept in agents.run_defaults (unset ones absent)."""

    prompt: str | None = None
    base_model: str | None = None
    environment_id: str | None = None
    worker_host: str | None = None
    credential_strategy: CredentialStrategy | None = None
    mcp_servers: dict[str, JsonObject] | None = None
    skills: list[str] = []
    secrets: list[str] = []  # names of team secrets

    @classmethod
    def stored(cls, value: JsonObject | None) -> RunDefaults:
        return msgspec.convert(value or {}, cls)

    def to_stored(self) -> JsonObject | None:
        stored: JsonObject = msgspec.to_builtins(self)
        return stored or None


class AutoMemory(Struct):
    enabled: bool


class Memory(Struct):
    attached_stores: Annotated[list[JsonObject], Meta(description="always empty here")]
    auto_memory: AutoMemory


class Agent(Struct, kw_only=True):
    """AgentResponse of the official client; optional fields are omitted when unset."""

    uid: str
    name: str
    team_uid: str
    created_at: Timestamp
    updated_at: Timestamp
    available: Annotated[bool, Meta(description="always true: no plan limits here")]
    default_runner_uid: Annotated[str, Meta(description="always empty here")]
    memory: Memory
    skills: list[str]
    secrets: list[SecretRef]
    description: str | UnsetType = UNSET
    agent_type: AgentType | UnsetType = UNSET
    factory_uid: str | UnsetType = UNSET
    prompt: str | UnsetType = UNSET
    base_model: str | UnsetType = UNSET
    environment_id: str | UnsetType = UNSET
    worker_host: str | UnsetType = UNSET
    credential_strategy: CredentialStrategy | UnsetType = UNSET
    mcp_servers: McpServers | UnsetType = UNSET

    @classmethod
    def from_row(cls, row: Row[Any]) -> Agent:
        defaults = RunDefaults.stored(row.run_defaults)
        return from_row(
            cls,
            row,
            updated_at=row.updated_at or row.created_at,
            available=True,  # no plan limits here: every agent may run
            default_runner_uid="",  # runners are not assigned per agent here
            memory=Memory(attached_stores=[], auto_memory=AutoMemory(enabled=False)),
            skills=defaults.skills,
            secrets=[SecretRef(name) for name in defaults.secrets],
            description=unless_none(row.description),
            agent_type=unless_none(row.agent_type),
            factory_uid=unless_none(row.factory_uid),
            prompt=unless_none(defaults.prompt),
            base_model=unless_none(defaults.base_model),
            environment_id=unless_none(defaults.environment_id),
            worker_host=unless_none(defaults.worker_host),
            credential_strategy=unless_none(defaults.credential_strategy),
            mcp_servers=unless_none(defaults.mcp_servers),
        )


class CreatedAgent(Agent, kw_only=True):
    api_key: Annotated[str, Meta(description="the agent's API key: shown this once only")]

    @classmethod
    def with_key(cls, agent: Agent, api_key: str) -> CreatedAgent:
        return cls(**msgspec.structs.asdict(agent), api_key=api_key)


class AgentList(Struct):
    agents: list[Agent]


class AgentFilter(Struct, kw_only=True):
    factory_uid: Annotated[str, Meta(description="only agents linked to this factory")] | None = (
        None
    )
