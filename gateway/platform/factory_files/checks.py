"""What only this server can check of a parsed tree, before anything is written: the deferred
references (model ids, team secrets and the values webhooks read, runners of the team,
environments, webhook UIDs this server issued to the factory, scheduled agents, delivery id
headers, the alias) and the limits a factory's stored state sets. Each failure is a diagnostic
at the place the tree names it; a tree with any applies nothing.

Not checked, and why (docs/factory-files.md): harness-native model ids (the harness's own),
MCP server ids (no MCP registry here), Linear and Slack names (kept by name until a provider
connection resolves them), worker hosts (a worker that has not registered yet is waited for)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import Code, DeferredReference, Diagnostic, FactoryTree
from gateway.foundation.store import tables as t
from gateway.kernel.catalog import EnvironmentSpec, ModelSpec, check_environment
from gateway.kernel.errors import InvalidRequest
from gateway.kernel.security import SecretBox
from gateway.platform.factory_files.state import StoredState
from gateway.webhook_gateway.signatures.identity_headers import identity_header_refusal
from gateway.webhook_gateway.webhooks.management import WEBHOOKS_PER_FACTORY, check_secret_value

MODELS_SHOWN = 12  # model ids a message lists before "..."
# what a model id may look like (gateway.kernel.catalog's Id): letters, digits and . : / @ + - _
MODEL_ID = re.compile(r"[A-Za-z0-9][\w.:/@+-]{0,199}")


@dataclass(frozen=True)
class Catalogue:
    """What the references are checked against besides the store: this server's models and
    environments (as the team sees them), and the box team secrets are read with."""

    team_uid: str
    models: tuple[ModelSpec, ...]
    environments: tuple[EnvironmentSpec, ...]
    box: SecretBox
    strict_models: bool = False  # GATEWAY_STRICT_MODEL_CATALOGUE: an unlisted model is an error


@dataclass
class Checked:
    """The diagnostics, the warnings (problems that do not stop apply: the plan shows them),
    and what the checks read that apply writes: the values of the team secrets webhook files
    name (a file webhook reads its secret at apply)."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)
    secret_values: dict[str, str] = field(default_factory=dict)

    def add(
        self, where: DeferredReference | str, code: Code, message: str, *, warning: bool = False
    ) -> None:
        found = self.warnings if warning else self.diagnostics
        if isinstance(where, str):
            found.append(
                Diagnostic(path=where, line=None, column=None, code=code.value, message=message)
            )
            return
        found.append(
            Diagnostic(
                path=where.path,
                line=where.line,
                column=where.column,
                code=code.value,
                message=message,
            )
        )


@dataclass(frozen=True)
class Known:
    """What the store holds that the references are checked against."""

    secrets: dict[str, str]  # name -> encrypted value
    runners: frozenset[str]  # runner configurations of the team's other factories
    webhooks: frozenset[str]  # live webhook UIDs of the factory that this apply keeps
    schedules: frozenset[str]
    aliases: dict[str, str]  # lower-cased alias -> the other factory of the team holding it


async def check_tree(
    conn: AsyncConnection, catalogue: Catalogue, tree: FactoryTree, state: StoredState
) -> Checked:
    known = await _known(conn, catalogue.team_uid, tree, state)
    checked = Checked()
    for reference in tree.deferred_references:
        check = _CHECKS.get(reference.kind)
        if check is not None:
            check(reference, known, catalogue, checked)
    _check_webhook_secrets(tree, known, catalogue, checked)
    await _check_limits(conn, tree, state, checked)
    await _check_task_titles(conn, tree, state, checked)
    return checked


async def _known(
    conn: AsyncConnection, team_uid: str, tree: FactoryTree, state: StoredState
) -> Known:
    s = t.team_secrets
    secrets = await conn.execute(
        select(s.c.name, s.c.value_encrypted).where(s.c.team_uid == team_uid)
    )
    f, r = t.factories, t.factory_runners
    others = f.c.uid != (state.factory_uid or "")
    runners = await conn.execute(
        select(r.c.name).join(f, f.c.uid == r.c.factory_uid).where(f.c.team_uid == team_uid, others)
    )
    aliases = await conn.execute(
        select(f.c.alias, f.c.uid).where(f.c.team_uid == team_uid, others, f.c.alias.is_not(None))
    )
    sa = t.scheduled_agents
    schedules = await conn.execute(select(sa.c.uid).where(sa.c.team_uid == team_uid))
    return Known(
        secrets={name: value for name, value in secrets},
        runners=frozenset(runners.scalars()),
        webhooks=await _kept_webhooks(conn, tree, state),
        schedules=frozenset(schedules.scalars()),
        aliases={alias.lower(): uid for alias, uid in aliases},
    )


async def _kept_webhooks(
    conn: AsyncConnection, tree: FactoryTree, state: StoredState
) -> frozenset[str]:
    """Live webhooks of the factory, less the file webhooks this apply deletes."""
    if state.factory_uid is None:
        return frozenset()
    w = t.webhooks
    query = select(w.c.uid, w.c.definition_name).where(
        w.c.factory_uid == state.factory_uid, w.c.deleted_at.is_(None)
    )
    declared = {hook.name for hook in tree.webhooks}
    return frozenset(
        uid for uid, name in await conn.execute(query) if name is None or name in declared
    )


Check = Callable[[DeferredReference, Known, Catalogue, Checked], None]


def _model(ref: DeferredReference, _known: Known, catalogue: Catalogue, out: Checked) -> None:
    """A model of the catalogue, not disabled. The server runs no model (runners do): a
    well-formed id the catalogue does not list is a warning the plan shows, unless the operator
    asked for a strict catalogue."""
    model = next((m for m in catalogue.models if m.id == ref.value), None)
    if model is None:
        ids = [m.id for m in catalogue.models if not m.disabled]
        shown = ", ".join(ids[:MODELS_SHOWN]) + (", ..." if len(ids) > MODELS_SHOWN else "")
        listed = f"GET /api/v1/agent/models: {shown}"
        if not MODEL_ID.fullmatch(ref.value):
            out.add(
                ref,
                Code.INVALID_REFERENCE,
                f"{ref.value!r} is not a model id (letters, digits and . : / @ + - _; {listed})",
            )
        elif catalogue.strict_models:
            out.add(
                ref,
                Code.INVALID_REFERENCE,
                f"unknown model {ref.value!r}: name a model of this server ({listed})",
            )
        else:
            out.add(
                ref,
                Code.UNLISTED_MODEL,
                f"model {ref.value!r} is not in this server's catalogue ({listed}): applied as "
                "written; the runner that executes the runs must know it",
                warning=True,
            )
    elif model.disabled:
        reason = f" ({model.disabled_reason})" if model.disabled_reason else ""
        out.add(ref, Code.INVALID_REFERENCE, f"model {ref.value!r} is disabled{reason}")


def _secret(ref: DeferredReference, known: Known, _catalogue: Catalogue, out: Checked) -> None:
    if ref.value not in known.secrets:
        out.add(
            ref,
            Code.INVALID_REFERENCE,
            f"no team secret named {ref.value!r}: create it first (gateway admin set-secret "
            f"--team <team> --name {ref.value} --value ...), then apply again",
        )


def _runner(ref: DeferredReference, known: Known, _catalogue: Catalogue, out: Checked) -> None:
    if ref.value not in known.runners:
        out.add(
            ref,
            Code.INVALID_REFERENCE,
            f"no runner {ref.value!r}: declare runners/{ref.value}.yaml in this tree, or name a "
            "runner another factory of this team declares",
        )


def _environment(ref: DeferredReference, known: Known, catalogue: Catalogue, out: Checked) -> None:
    del known
    try:
        check_environment(catalogue.environments, ref.value, (catalogue.team_uid,), "environmentId")
    except InvalidRequest as exc:
        out.add(ref, Code.INVALID_REFERENCE, exc.detail.removeprefix("environmentId: "))


def _webhook(ref: DeferredReference, known: Known, _catalogue: Catalogue, out: Checked) -> None:
    if ref.value not in known.webhooks:
        out.add(
            ref,
            Code.INVALID_REFERENCE,
            f"webhook {ref.value!r} is not a live webhook this server issued to this factory: "
            "apply its webhooks/<name>.yaml first and use the UID it is given (GET "
            "/api/v1/factory/{uid}/webhooks lists them)",
        )


def _schedule(ref: DeferredReference, known: Known, _catalogue: Catalogue, out: Checked) -> None:
    if ref.value not in known.schedules:
        out.add(
            ref,
            Code.INVALID_REFERENCE,
            f"no scheduled agent {ref.value!r} in this team (GET /api/v1/agent/schedules); or "
            "declare the schedule inline: `schedule: {cron: ...}`",
        )


def _header(ref: DeferredReference, _known: Known, _catalogue: Catalogue, out: Checked) -> None:
    refusal = identity_header_refusal(ref.value)
    if refusal is not None:
        out.add(
            ref,
            Code.INVALID_VALUE,
            f"deliveryIdHeader {ref.value!r} {refusal}; name the header in which the sender puts "
            "its own event id",
        )


def _alias(ref: DeferredReference, known: Known, _catalogue: Catalogue, out: Checked) -> None:
    holder = known.aliases.get(ref.value.lower())
    if holder is not None:
        out.add(
            ref,
            Code.INVALID_VALUE,
            f"alias {ref.value!r} is taken by factory {holder} of this workspace (aliases compare "
            "without case): choose another",
        )


_CHECKS: dict[str, Check] = {
    "model": _model,
    "secret": _secret,
    "runner": _runner,
    "environment": _environment,
    "webhook": _webhook,
    "schedule": _schedule,
    "delivery_id_header": _header,
    "alias": _alias,
}


def _check_webhook_secrets(
    tree: FactoryTree, known: Known, catalogue: Catalogue, out: Checked
) -> None:
    """A webhook file's secret is read now: it must suit the webhook's mode and scheme."""
    where = {
        (ref.path, ref.value): ref
        for ref in tree.deferred_references
        if ref.kind == "secret" and ref.path.startswith("webhooks/")
    }
    for hook in tree.webhooks:
        encrypted = known.secrets.get(hook.secret_name)
        if encrypted is None:
            continue  # reported as an unknown secret
        value = catalogue.box.decrypt(encrypted)
        try:
            check_secret_value(hook.auth_mode, hook.signature_scheme, value, "secretName")
        except InvalidRequest as exc:
            ref = where.get((hook.path, hook.secret_name))
            out.add(ref or hook.path, Code.INVALID_VALUE, exc.detail.removeprefix("secretName: "))
            continue
        out.secret_values[hook.secret_name] = value


async def _check_limits(
    conn: AsyncConnection, tree: FactoryTree, state: StoredState, out: Checked
) -> None:
    if state.factory_uid is None:
        others = 0
    else:
        w = t.webhooks
        query = select(func.count()).where(
            w.c.factory_uid == state.factory_uid,
            w.c.deleted_at.is_(None),
            w.c.definition_name.is_(None),
        )
        others = int((await conn.execute(query)).scalar_one())
    if others + len(tree.webhooks) > WEBHOOKS_PER_FACTORY:
        out.add(
            ".",
            Code.LIMIT_EXCEEDED,
            f"the factory would have {others + len(tree.webhooks)} webhooks ({others} created "
            f"through the API); a factory may have at most {WEBHOOKS_PER_FACTORY}",
        )
    await _check_foremen(conn, tree, state, out)


async def _check_foremen(
    conn: AsyncConnection, tree: FactoryTree, state: StoredState, out: Checked
) -> None:
    """An agent whose file is gone is deleted: not while another factory has it as foreman."""
    declared = {agent.name for agent in tree.agents}
    leaving = {uid: name for name, uid in state.agents.items() if name not in declared}
    if not leaving:
        return
    f = t.factories
    query = select(f.c.foreman_agent_uid, f.c.uid).where(
        f.c.foreman_agent_uid.in_(sorted(leaving)), f.c.uid != state.factory_uid
    )
    for agent_uid, factory_uid in await conn.execute(query):
        out.add(
            f"agents/{leaving[agent_uid]}/agent.md",
            Code.INVALID_REFERENCE,
            f"agent {leaving[agent_uid]!r} is gone from the tree but is the foreman of factory "
            f"{factory_uid}: make another agent that factory's foreman first",
        )


async def _check_task_titles(
    conn: AsyncConnection, tree: FactoryTree, state: StoredState, out: Checked
) -> None:
    """Titles are unique within a suite, tasks the API added to a file suite included."""
    for suite in tree.benchmark_suites:
        stored = state.resources.get(("benchmark_suite", suite.slug))
        k = t.benchmark_tasks
        added = (
            {}
            if stored is None
            else {
                title: uid
                for title, uid in await conn.execute(
                    select(k.c.title, k.c.uid).where(
                        k.c.suite_uid == stored.uid, k.c.slug.is_(None)
                    )
                )
            }
        )
        seen: dict[str, str] = {}
        for task in suite.tasks:
            if task.title in added:
                out.add(
                    task.path,
                    Code.DUPLICATE_VALUE,
                    f"title {task.title!r} is the title of task {added[task.title]}, added to "
                    "this suite through the API; rename one of them",
                )
            if task.title in seen:
                out.add(
                    task.path,
                    Code.DUPLICATE_VALUE,
                    f"title {task.title!r} is also the title of tasks/{seen[task.title]}.yaml of "
                    "this suite; titles are unique within a suite",
                )
            seen.setdefault(task.title, task.slug)
