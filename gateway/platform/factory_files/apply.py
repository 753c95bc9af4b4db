"""Plan and apply a factory definition tree (docs/factory-files.md, "Plan and apply").

The tree is parsed (every problem of it at once), the factory found (by uid, else by the tree's
name in the team, else it is new), the stored definition read, the references only this server
can resolve checked, and the plan made: what would be created, updated and deleted. Apply
carries the plan out in the same transaction; a tree with any diagnostic changes nothing
(`InvalidFactoryTree`, a 422 listing them all)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import Diagnostic, FactoryTree, never_firing
from factory_format.model import ResourceKey
from gateway.foundation.accounts.identities import Principal, require_team
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.kernel.errors import Conflict, Forbidden, InvalidFactoryTree, InvalidRequest, NotFound
from gateway.platform.factory_files.checks import Catalogue, check_tree
from gateway.platform.factory_files.models import Plan, TreeWebhook
from gateway.platform.factory_files.plan import plan_changes
from gateway.platform.factory_files.posted import Parsed, relocated
from gateway.platform.factory_files.state import StoredState, load_state
from gateway.platform.factory_files.write import write_changes
from gateway.webhook_gateway.providers import PROVIDERS

# where the events triggers wait for come from here: the provider connections, the custom
# webhooks, schedules and the factory's own work items; a trigger of any other provider
# (Microsoft Teams) never fires (a warning at plan and apply)
FIRING = (*PROVIDERS, "webhook", "schedule", "factory")
# a webhook's field in a plan when its managed secret changed
SECRET_VALUE = "secret_value"  # noqa: S105 -- a field name, not a secret


@dataclass(frozen=True)
class Caller:
    """Who asks: a principal (HTTP: user credentials of the factory's team), or the command
    line (`principal` None: the operator, who may name any team)."""

    principal: Principal | None = None
    team_uid: str | None = None  # the team to find or create the factory in

    @property
    def creator_uid(self) -> str | None:
        return None if self.principal is None else self.principal.uid


async def plan_tree(
    services: Services, parsed: Parsed, caller: Caller, factory_uid: str | None
) -> Plan:
    """What apply would do; nothing is written."""
    return await _run(services, parsed, caller, factory_uid, write=False)


async def apply_tree(
    services: Services, parsed: Parsed, caller: Caller, factory_uid: str | None
) -> Plan:
    """The plan, carried out in one transaction; what it did."""
    return await _run(services, parsed, caller, factory_uid, write=True)


async def _run(
    services: Services, parsed: Parsed, caller: Caller, factory_uid: str | None, *, write: bool
) -> Plan:
    tree = parsed.result.tree
    if tree is None:
        raise InvalidFactoryTree(parsed.diagnostics, parsed.result.omitted)
    session = services.database.transaction() if write else services.database.read()
    async with session as conn:
        team_uid, factory = await _locate(conn, caller, tree, factory_uid, lock=write)
        state = await load_state(conn, factory)
        catalogue = Catalogue(
            team_uid=team_uid,
            models=services.settings.models,
            environments=services.settings.environments,
            box=services.secret_box,
            strict_models=services.settings.strict_model_catalogue,
        )
        checked = await check_tree(conn, catalogue, tree, state)
        if checked.diagnostics:
            found = [relocated(d, parsed.prefix) for d in checked.diagnostics]
            raise InvalidFactoryTree(sorted(found, key=Diagnostic.sort_key))
        stale = _stale_secrets(services, tree, state, checked.secret_values)
        changes = plan_changes(tree, state, stale)
        uid = state.factory_uid
        if write and changes:
            uid = await write_changes(
                conn,
                services,
                team_uid=team_uid,
                creator_uid=caller.creator_uid,
                tree=tree,
                state=state,
                changes=changes,
                secret_values=checked.secret_values,
            )
        webhooks = await _tree_webhooks(conn, services, tree, uid)
    warnings = sorted(
        (relocated(d, parsed.prefix) for d in [*checked.warnings, *never_firing(tree, FIRING)]),
        key=Diagnostic.sort_key,
    )
    return Plan(factory_uid=uid, changes=changes, webhooks=webhooks, warnings=warnings)


async def _locate(
    conn: AsyncConnection,
    caller: Caller,
    tree: FactoryTree,
    factory_uid: str | None,
    *,
    lock: bool,
) -> tuple[str, Row[Any] | None]:
    """(the team, the factory's row or None when it is to be created)."""
    principal = caller.principal
    if principal is not None and principal.kind != "user":
        raise Forbidden("Authorization: applying factory definitions needs user credentials")
    f = t.factories
    if factory_uid is not None:
        query = select(f).where(f.c.uid == factory_uid)
        row = (await conn.execute(query.with_for_update() if _locks(conn, lock) else query)).first()
        if row is None:
            raise NotFound(f"factory_uid: no factory {factory_uid}")
        if principal is not None and row.team_uid not in principal.team_uids:
            raise Forbidden(
                f"factory_uid: {factory_uid} belongs to a team this credential is not in"
            )
        if caller.team_uid is not None and caller.team_uid != row.team_uid:
            raise InvalidRequest(
                f"factory_uid: {factory_uid} is not a factory of team {caller.team_uid}"
            )
        return str(row.team_uid), row
    team_uid = _team(caller)
    await require_team(conn, team_uid)
    query = select(f).where(f.c.team_uid == team_uid, f.c.name == tree.factory.name)
    rows = (await conn.execute(query.with_for_update() if _locks(conn, lock) else query)).all()
    if len(rows) > 1:
        raise Conflict(
            f"factory_uid: {len(rows)} factories of this team are named {tree.factory.name!r}; "
            "name the one this tree defines"
        )
    return team_uid, rows[0] if rows else None


def _locks(conn: AsyncConnection, lock: bool) -> bool:
    """Row locks serialise concurrent applies to one factory (SQLite has one writer anyway)."""
    return lock and conn.dialect.name == "postgresql"


def _team(caller: Caller) -> str:
    if caller.team_uid is not None:
        return caller.team_uid
    principal = caller.principal
    if principal is None:
        raise InvalidRequest("team: give the team (--team) or the factory (--factory)")
    if principal.active_team_uid is not None:
        return principal.active_team_uid
    if len(principal.team_uids) != 1:
        raise InvalidRequest(
            "X-Service-Team-Uid: required, this credential belongs to several teams (or give "
            "factory_uid)"
        )
    return next(iter(principal.team_uids))


def _stale_secrets(
    services: Services, tree: FactoryTree, state: StoredState, values: dict[str, str]
) -> dict[ResourceKey, list[str]]:
    """Webhooks whose managed secret has another value than the one they read at their last
    apply: applying again reads it anew, so the plan says so."""
    stale: dict[ResourceKey, list[str]] = {}
    for hook in tree.webhooks:
        stored = state.resources.get(("webhook", hook.name))
        if stored is None or hook.secret_name not in values:
            continue
        kept = stored.row.secret_encrypted
        if kept is None or services.secret_box.decrypt(kept) != values[hook.secret_name]:
            stale[("webhook", hook.name)] = [SECRET_VALUE]
    return stale


async def _tree_webhooks(
    conn: AsyncConnection, services: Services, tree: FactoryTree, factory_uid: str | None
) -> list[TreeWebhook]:
    """Every webhook of the tree with its UID and ingress URL (null until it is created)."""
    found: dict[str, tuple[str, str]] = {}
    if factory_uid is not None and tree.webhooks:
        w = t.webhooks
        query = select(w.c.definition_name, w.c.uid, w.c.auth_mode).where(
            w.c.factory_uid == factory_uid,
            w.c.deleted_at.is_(None),
            w.c.definition_name.in_([hook.name for hook in tree.webhooks]),
        )
        found = {name: (uid, mode) for name, uid, mode in await conn.execute(query)}
    base = services.settings.webhook_base_url
    listed = []
    for hook in tree.webhooks:
        uid, mode = found.get(hook.name, (None, hook.auth_mode))
        url = None if uid is None else f"{base}/webhooks/w/{uid}"
        if url is not None and mode == "url_token":
            url += "/{token}"
        listed.append(TreeWebhook(name=hook.name, uid=uid, ingress_url=url))
    return listed
