"""POST /agent/runs (and /agent/run): a cloud agent run created from the official clients' body.

What the clients send beyond the prompt and config: `skill` (names the run's skill, winning over
config.skill_spec; `repo:skill` is read as the repository of an environment the team may use),
`mode` (of its first execution), `metadata` (inherited from a parent run, the request's keys
winning), files (`attachments`, `images`: stored as the run's attachments before the
transaction that creates it), `agent_identity_uid` (an agent of the run's team executes it),
and `team`, `interactive` and `on_behalf_of`, whose meaning here docs/api.md gives.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass

from msgspec import structs
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.attachment_storage import AttachmentStorage
from gateway.kernel.catalog import EnvironmentSpec, ModelSpec, access_of
from gateway.kernel.errors import Forbidden, InvalidRequest
from gateway.platform.runs.attachments.files import (
    NewFile,
    StoredFile,
    check_media_type,
    record_files,
)
from gateway.platform.runs.creation.agent_config import parse_config
from gateway.platform.runs.creation.models import RunCreate, RunCreated
from gateway.platform.runs.creation.new_runs import NewRun, insert_run
from gateway.platform.runs.creation.worker_pinning import check_worker_host
from gateway.platform.runs.record.models import AgentConfig, RunRecord
from gateway.platform.runs.record.store import can_view, find_run, newest_root_run
from gateway.platform.runs.skills.specs import parse_skill_spec


@dataclass(frozen=True, slots=True)
class Catalog:
    """What a run may select: the deployment's models and environments."""

    models: Sequence[ModelSpec]
    environments: Sequence[EnvironmentSpec]


def files_of(spec: RunCreate, storage: AttachmentStorage) -> list[NewFile]:
    """The files sent with the run, decoded; a 400 naming the one that cannot be taken."""
    files = []
    for i, attachment in enumerate(spec.attachments or []):
        field = f"attachments[{i}]"
        media_type = check_media_type(storage, attachment.mime_type, f"{field}.mime_type")
        files.append(NewFile(attachment.file_name, media_type, _decoded(attachment.data, field)))
    for i, image in enumerate(spec.images or []):
        name = f"image-{i + 1}.{image.mime_type.split('/')[1]}"
        files.append(NewFile(name, image.mime_type, _decoded(image.data, f"images[{i}]")))
    for file in files:
        if len(file.content) > storage.max_bytes:
            raise InvalidRequest(f"attachments: {file.name} is over {storage.max_bytes} bytes")
    return files


def _decoded(data: str, field: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequest(f"{field}.data: not valid base64") from exc


async def create_agent_run(
    conn: AsyncConnection,
    principal: Principal,
    spec: RunCreate,
    catalog: Catalog,
    files: Sequence[StoredFile] = (),
) -> RunCreated:
    """A QUEUED cloud run. Extensions beyond the official body: `parent_run_id` (a child in the
    parent's tree and conversation) and `conversation_id` (a new top-level run continuing it)."""
    _check_principal_fields(principal, spec)
    parent = await _parent(conn, principal, spec)
    if spec.conversation_id is not None:
        current = await newest_root_run(conn, spec.conversation_id)
        if current is None or not can_view(principal, current):
            raise InvalidRequest(f"conversation_id: no visible conversation {spec.conversation_id}")
    team = principal.active_team_uid or min(principal.team_uids, default=None)
    if parent is not None and parent.team_uid in principal.team_uids:
        team = parent.team_uid  # a child stays in its tree's team
    config = parse_config(_with_skill(spec, catalog, principal), catalog.models)
    await check_worker_host(conn, team, config, "config.worker_host")
    new = NewRun(
        prompt=_prompt(spec, config),
        title=spec.title,
        team_uid=team,
        creator=principal,
        agent_config=config,
        metadata=_metadata(spec, parent),
        artifacts=[file.artifact(utcnow()) for file in files] or None,
        parent=parent,
        conversation_id=spec.conversation_id,
        factory_uid=None if parent is None else parent.factory_uid,
        agent_uid=await _executing_agent(conn, principal, spec, team),
        mode=None if spec.mode in (None, "normal") else spec.mode,
    )
    run = await insert_run(conn, new)
    await record_files(conn, run, files)
    return RunCreated(run.run_id, run.run_id, run.state)


def _check_principal_fields(principal: Principal, spec: RunCreate) -> None:
    if spec.parent_run_id and spec.conversation_id:
        raise InvalidRequest("conversation_id: give either parent_run_id or conversation_id")
    if spec.team is False:
        raise InvalidRequest(
            "team: runs here are owned by a team (its runners execute them); omit it or send true"
        )
    if spec.on_behalf_of is not None:
        if principal.kind != "agent":
            raise InvalidRequest("on_behalf_of: only agent API keys may use it")
        raise Forbidden("on_behalf_of: no agent here may act on behalf of a user")


async def _parent(conn: AsyncConnection, principal: Principal, spec: RunCreate) -> RunRecord | None:
    if spec.parent_run_id is None:
        return None
    parent = await find_run(conn, spec.parent_run_id)
    if parent is None or not can_view(principal, parent):
        raise InvalidRequest(f"parent_run_id: no visible run {spec.parent_run_id}")
    return parent


def _with_skill(spec: RunCreate, catalog: Catalog, principal: Principal) -> AgentConfig | None:
    """The config, its skill_spec the request's `skill` when given (read as owner/repo:...)."""
    if spec.skill is None:
        return spec.config
    skill = spec.skill
    repo, _, target = skill.partition(":")
    if "/" not in repo and target:
        skill = f"{_owner_of(repo, catalog, principal)}/{skill}"
    parse_skill_spec(skill, "skill")
    return structs.replace(spec.config or AgentConfig(), skill_spec=skill)


def _owner_of(repo: str, catalog: Catalog, principal: Principal) -> str:
    """The owner of `repo` among the repositories of the environments the caller may use."""
    owners = {
        linked.owner
        for environment in catalog.environments
        if access_of(environment, principal.team_uids) is not None
        for linked in environment.github_repos
        if linked.repo == repo
    }
    if len(owners) != 1:
        found = "no" if not owners else "more than one"
        raise InvalidRequest(
            f"skill: {found} repository named {repo!r} among your environments; give owner/repo"
        )
    return owners.pop()


def _prompt(spec: RunCreate, config: AgentConfig | None) -> str:
    if spec.prompt is not None:
        return spec.prompt
    if config is not None and isinstance(config.skill_spec, str):
        return ""  # the skill is the work (spec 2.2)
    if spec.conversation_id is not None:
        return ""  # a handoff continues the conversation
    raise InvalidRequest("prompt: required unless a skill or a conversation_id is given")


def _metadata(spec: RunCreate, parent: RunRecord | None) -> dict[str, str] | None:
    merged = {**((parent.metadata or {}) if parent is not None else {}), **(spec.metadata or {})}
    return merged or None


async def _executing_agent(
    conn: AsyncConnection, principal: Principal, spec: RunCreate, team: str | None
) -> str | None:
    """`agent_identity_uid` (an agent of the run's team), else the calling agent (spec 5)."""
    if spec.agent_identity_uid is None:
        return principal.uid if principal.kind == "agent" else None
    a = t.agents
    query = select(a.c.uid).where(a.c.uid == spec.agent_identity_uid, a.c.team_uid == team)
    if (await conn.execute(query)).first() is None:
        raise InvalidRequest(
            f"agent_identity_uid: no agent {spec.agent_identity_uid} in the run's team"
        )
    return spec.agent_identity_uid
