"""Command line: gateway serve | worker | runner | admin ... | apply DIR (admin prints one JSON
object)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import msgspec
import orjson

from gateway.composition.preflight import masked, reachable
from gateway.foundation.services import Services, build_services
from gateway.foundation.store import migrate
from gateway.foundation.store.db import sqlite_file
from gateway.kernel.settings import Settings, SettingsError, database_url_setting, load_settings
from gateway.kernel.types import JsonObject
from gateway.webhook_gateway.signatures import PROVIDER_VERIFIERS

R = TypeVar("R")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "server", None) is not None:
        return _apply_remote(args)  # a client of a running gateway: no settings of its own
    if getattr(args, "client", False):
        return _listen(args)  # the same
    try:
        if args.needs_store is not None:
            missing = _missing_store(*database_url_setting(), args.needs_store)
            if missing is not None:
                print(missing, file=sys.stderr)
                return 2
        settings = load_settings()
    except SettingsError as exc:
        print(f"gateway: configuration error: {exc}", file=sys.stderr)
        return 2
    command: Callable[[Settings, argparse.Namespace], int] = args.run
    return command(settings, args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gateway", description=__doc__)
    parser.add_argument("--version", action="version", version=f"gateway {_version()}")
    # needs_store: the command's name when it reads a database that must exist already
    parser.set_defaults(needs_store=None)
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="run the HTTP server (API and ingress)",
        description="Serves the API under /api/v1 and the ingress under /webhooks/w/. Without "
        "GATEWAY_WEBHOOK_BASE_URL, ingress URLs handed out use http://HOST:PORT.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (8000)")
    serve.add_argument(
        "--workers", type=int, default=1, help="HTTP worker processes; more than 1 needs Redis (1)"
    )
    serve.set_defaults(run=_serve)

    worker = sub.add_parser(
        "worker",
        help="run only the evaluator (accepted deliveries -> runs)",
        description="Evaluates accepted deliveries into runs, at GATEWAY_EVALUATOR_PRIORITY; run "
        "as many as needed beside ingress-only servers (GATEWAY_EVALUATOR=off).",
    )
    # set by `gateway serve` for its evaluator child: stop when that server process is gone
    worker.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    # and the read end of a pipe only that server holds open: EOF when it is gone
    worker.add_argument("--lifeline-fd", type=int, help=argparse.SUPPRESS)
    worker.set_defaults(run=_worker)

    runner = sub.add_parser(
        "runner",
        help="execute queued runs as shell commands (a self-hosted worker)",
        description="Claims queued runs of the agent's team from the API at GATEWAY_API_URL "
        "(default http://127.0.0.1:8000) with the agent API key in GATEWAY_RUNNER_KEY, and runs "
        "COMMAND through the shell for each: the composed prompt on stdin; RUN_ID, RUN_AGENT, "
        "RUN_MODEL, RUN_CONTEXT, RUN_SKILLS, RUN_MCP_CONFIG, the run's secrets and more in its "
        "environment (docs/runners.md). "
        "Exit 0 is SUCCEEDED, anything else FAILED.",
    )
    runner.add_argument("--command", required=True, help="shell command run for each run")
    runner.add_argument("--factory", help="claim only this factory's runs (default: any)")
    runner.add_argument(
        "--concurrency", type=int, default=1, help="runs executed at once (default 1)"
    )
    runner.add_argument("--name", help="shown in the workers list (default: <host>-runner)")
    runner.add_argument(
        "--worker-id",
        help="run as the self-hosted worker of this id: only runs whose config.worker_host names "
        "it (default: one of the team's pool, for runs pinned to no worker)",
    )
    runner.add_argument(
        "--checkout",
        action="store_true",
        help="clone the repository a run's event names (else its factory's first) into the "
        "working directory at the event's ref before setup; a private repository's token in "
        "GATEWAY_CHECKOUT_TOKEN",
    )
    runner.add_argument(
        "--clone-url-template",
        action="append",
        default=[],
        metavar="[PROVIDER=]TEMPLATE",
        help="the clone URL of {owner}/{name} (also {provider}), for one provider (github, "
        "gitlab) or all; repeatable; default GATEWAY_CLONE_URL_TEMPLATE, else "
        "https://github.com/{owner}/{name}.git and https://gitlab.com/{owner}/{name}.git",
    )
    runner.add_argument(
        "--checkout-depth",
        type=int,
        default=0,
        help="fetch this many commits of history (default 0: all of it)",
    )
    runner.add_argument(
        "--grace",
        type=float,
        default=30.0,
        help="seconds runs in hand get to finish after SIGTERM before they are given back "
        "(default 30)",
    )
    runner.set_defaults(run=_runner)

    listen = sub.add_parser(
        "listen",
        help="forward a remote gateway's deliveries to a local URL (development)",
        description="Follows the deliveries of one webhook or provider connection of the "
        "gateway at GATEWAY_API_URL (default http://127.0.0.1:8000), with the API key in "
        "GATEWAY_API_KEY, and re-sends each, body and headers as received, to --forward-to; "
        "prints one line per delivery with the local answer's status and time. Resumes after "
        "a dropped connection without losing or repeating a delivery. Headers the gateway "
        "redacts (credentials, signatures: it verified them) are not forwarded.",
    )
    source = listen.add_mutually_exclusive_group(required=True)
    source.add_argument("--webhook", metavar="UID", help="a custom webhook's uid (wh_...)")
    source.add_argument("--connection", metavar="UID", help="a provider connection's uid")
    listen.add_argument(
        "--forward-to", required=True, metavar="URL", help="the local URL deliveries go to"
    )
    listen.add_argument("--count", type=int, help=argparse.SUPPRESS)  # stop after N (tests)
    listen.set_defaults(run=_listen, client=True)

    apply = sub.add_parser(
        "apply",
        help="make a factory match its definition files (v1alpha1)",
        description="Applies the factory definition tree in DIR (the directory holding "
        "factory.yaml, or a repository with one such directory) in one transaction and prints "
        "the plan it carried out: one line per change (+ create, ~ update (fields), - delete) "
        "and a summary, or with --json one JSON object. The factory is --factory, else the "
        "factory of --team named as factory.yaml names it, created if there is none. "
        "Problems of the tree go to standard error, one per line; nothing changes then. "
        "Without --server the command writes the database of GATEWAY_DATABASE_URL (it must "
        "exist: the server's); with --server URL it posts the tree to that gateway's "
        "/api/v1/factory-files/apply (or /plan) with the user API key in GATEWAY_API_KEY.",
    )
    apply.add_argument("directory", metavar="DIR", help="the tree (docs/factory-files.md)")
    target = apply.add_mutually_exclusive_group()
    target.add_argument("--team", help="uid of the team whose factory the tree defines")
    target.add_argument("--factory", help="uid of the factory the tree defines")
    apply.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    apply.add_argument(
        "--json", action="store_true", help="print the plan as one JSON object (for machines)"
    )
    apply.add_argument(
        "--server",
        metavar="URL",
        help="a running gateway (http://host:port) to post the tree to, with the user API key "
        "in GATEWAY_API_KEY; --team then picks one of the key's teams (default: its only one)",
    )
    apply.set_defaults(run=_apply, needs_store="gateway apply")

    admin = sub.add_parser(
        "admin",
        help="bootstrap teams, users, agents, factories, secrets",
        description="Each command prints one JSON object (API keys are shown once).",
    )
    commands = admin.add_subparsers(required=True, metavar="ADMIN_COMMAND", title="commands")
    for name, summary, options, run in _ADMIN_COMMANDS:
        cmd = commands.add_parser(name, help=summary, description=summary)
        for option, meaning in options:
            if option in POSITIONAL:
                cmd.add_argument(option, choices=POSITIONAL[option], help=meaning)
                continue
            optional = option in OPTIONAL or (name, option) in OPTIONAL
            cmd.add_argument(
                f"--{option}",
                required=not optional,
                help=meaning + (" (optional)" if optional else ""),
            )
        if name == "demo":
            cmd.add_argument(
                "--format",
                choices=("json", "env"),
                default="json",
                help="json: one object; env: export lines for a shell (default json)",
            )
        cmd.set_defaults(
            run=lambda s, a, run=run: _admin(s, a, run),
            admin_command=name,
            needs_store=None if name in CREATE_A_STORE else f"gateway admin {name}",
        )
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("webhook-gateway")
    except PackageNotFoundError:  # run from a source tree that was not installed
        return "unknown"


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.foundation.metrics.directory import prepare_multiprocess_dir

    # first: every process serve starts counts into this directory (docs/operations.md)
    remove_metrics_dir = prepare_multiprocess_dir()
    try:
        return _serve_with_metrics_dir(settings, args)
    finally:
        remove_metrics_dir()


def _serve_with_metrics_dir(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.http import http_server

    _default_ingress_url(settings, args.host, args.port)
    if not reachable(settings):
        return 1
    _startup_block(settings, args)
    if args.workers > 1 and not settings.uses_redis:
        print(
            "gateway: --workers > 1 needs GATEWAY_REDIS_URL: the embedded backend keeps rate "
            "limits and de-duplication in one process",
            file=sys.stderr,
        )
        return 2
    asyncio.run(_migrate_only(settings))
    evaluator = None
    _exit_on_stop_signals()
    if settings.evaluator == "process":
        from gateway.webhook_gateway.evaluator.child_process import EvaluatorProcess
        from gateway.webhook_gateway.evaluator.cpu_priority import idle_cgroup_name

        idle = settings.evaluator_priority == "idle" and settings.evaluator_idle_cgroup
        evaluator = EvaluatorProcess(
            idle_cgroup=idle_cgroup_name(settings.redis_prefix) if idle else None
        )
        evaluator.start()
    try:
        http_server.run(settings, args.host, args.port, args.workers)
    finally:
        if evaluator is not None:
            evaluator.stop()
    return 0


def _startup_block(settings: Settings, args: argparse.Namespace) -> None:
    """What this server runs with, once, before it starts (passwords masked)."""
    import os

    evaluator: str = settings.evaluator
    if evaluator != "off":
        evaluator += f", priority {settings.evaluator_priority}"
    facts = {
        "version": _version(),
        "backend": f"redis{' cluster' if settings.redis_cluster else ''} "
        f"{masked(settings.redis_url)}, prefix {settings.redis_prefix}"
        if settings.redis_url
        else "embedded (in-process limits and de-duplication)",
        "database": masked(settings.database_url),
        "secret_key": settings.secret_key_source,
        "evaluator": evaluator,
        "listen": f"http://{args.host}:{args.port} (uvicorn, {args.workers} worker(s))",
        "ingress_urls": os.environ.get("GATEWAY_WEBHOOK_BASE_URL", settings.webhook_base_url)
        + "/webhooks/w/...",
    }
    if settings.log_format == "json":
        sys.stderr.write(orjson.dumps({"message": "gateway starting", **facts}).decode() + "\n")
        return
    width = max(map(len, facts))
    lines = [f"  {name.replace('_', ' '):<{width}}  {value}" for name, value in facts.items()]
    sys.stderr.write("gateway starting\n" + "\n".join(lines) + "\n")


def _default_ingress_url(settings: Settings, host: str, port: int) -> None:
    """Without GATEWAY_WEBHOOK_BASE_URL, ingress URLs use the address served here (set for
    the HTTP workers and the evaluator child, which read the environment); with it, a warning
    when it names this machine on another port."""
    import os
    from urllib.parse import urlsplit

    loopback = {"127.0.0.1", "localhost", "::1"}
    every_address = ("0.0.0.0", "::", "")  # noqa: S104 -- what --host may say, not a bind
    if not settings.webhook_base_url_given:
        shown = "127.0.0.1" if host in every_address else host
        shown = f"[{shown}]" if ":" in shown else shown
        os.environ["GATEWAY_WEBHOOK_BASE_URL"] = f"http://{shown}:{port}"
        return
    given = urlsplit(settings.webhook_base_url)
    default_port = 443 if given.scheme == "https" else 80
    if given.hostname in loopback | {host} and (given.port or default_port) != port:
        print(
            f"gateway serve: warning: GATEWAY_WEBHOOK_BASE_URL={settings.webhook_base_url} "
            f"names this machine on another port than --port {port}; ingress URLs handed out "
            "will use it",
            file=sys.stderr,
        )


def _exit_on_stop_signals() -> None:
    """uvicorn re-raises SIGINT/SIGTERM once its graceful shutdown is done; as SystemExit they
    unwind through `_serve`'s `finally`, which stops the evaluator child before this process
    exits. Granian installs handlers of its own and returns after its graceful shutdown, into
    the same `finally`."""

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(0)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)


def _worker(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.composition.worker_process import run_worker

    if not reachable(settings):
        return 1
    asyncio.run(run_worker(settings, parent_pid=args.parent_pid, lifeline_fd=args.lifeline_fd))
    return 0


def _listen(args: argparse.Namespace) -> int:
    import os

    from gateway.foundation.listen import Listener, ListenOptions

    key = os.environ.get("GATEWAY_API_KEY", "").strip()
    if not key:
        print("gateway listen: set GATEWAY_API_KEY to an API key", file=sys.stderr)
        return 2
    api_url = os.environ.get("GATEWAY_API_URL", "http://127.0.0.1:8000")
    for name, url in (("GATEWAY_API_URL", api_url), ("--forward-to", args.forward_to)):
        if not url.startswith(("http://", "https://")):
            print(f"gateway listen: {name}: expected an http(s) URL, got {url!r}", file=sys.stderr)
            return 2
    source = (
        f"webhooks/{args.webhook}" if args.webhook else f"provider-connections/{args.connection}"
    )
    options = ListenOptions(api_url, key, source, args.forward_to, once=args.count)
    try:
        return Listener(options).run()
    except KeyboardInterrupt:
        return 0


def _runner(settings: Settings, args: argparse.Namespace) -> int:
    import os

    from gateway.platform.runner.loop import Runner, RunnerOptions

    key = os.environ.get("GATEWAY_RUNNER_KEY", "").strip()
    if not key:
        print("gateway runner: set GATEWAY_RUNNER_KEY to an agent API key", file=sys.stderr)
        return 2
    if args.concurrency < 1:
        print("gateway runner: --concurrency must be at least 1", file=sys.stderr)
        return 2
    from gateway.kernel import logs

    logs.configure("info", settings.log_format, "%(asctime)s runner: %(message)s")
    api_url = os.environ.get("GATEWAY_API_URL", "http://127.0.0.1:8000")
    if not api_url.startswith(("http://", "https://")):
        print(f"gateway runner: GATEWAY_API_URL: expected an http(s) URL, got {api_url!r}",
              file=sys.stderr)  # fmt: skip
        return 2
    checkout = None
    if args.checkout:
        from gateway.platform.runner.checkout import CheckoutSettings, parse_templates

        configured = os.environ.get("GATEWAY_CLONE_URL_TEMPLATE", "").split()
        try:
            templates = parse_templates(args.clone_url_template or configured)
        except ValueError as exc:
            print(f"gateway runner: {exc}", file=sys.stderr)
            return 2
        token = os.environ.get("GATEWAY_CHECKOUT_TOKEN", "").strip() or None
        checkout = CheckoutSettings(templates, token, max(0, args.checkout_depth))
    options = RunnerOptions(
        api_url=api_url,
        key=key,
        command=args.command,
        factory_uid=args.factory,
        concurrency=args.concurrency,
        name=args.name,
        grace_s=args.grace,
        worker_id=args.worker_id,
        checkout=checkout,
    )
    return Runner(options).run()


def _apply(settings: Settings, args: argparse.Namespace) -> int:
    from pathlib import Path

    from factory_format import DefinitionRootError
    from gateway.kernel.errors import InvalidFactoryTree, NotFound, ServiceError
    from gateway.platform.factory_files.apply import Caller, apply_tree, plan_tree
    from gateway.platform.factory_files.models import Plan
    from gateway.platform.factory_files.plan_text import diagnostic_line
    from gateway.platform.factory_files.posted import parse_local

    if args.team is None and args.factory is None:
        print("gateway apply: give --team or --factory (or --server URL)", file=sys.stderr)
        return 2

    async def run(services: Services) -> Plan:
        parsed = parse_local(Path(args.directory))
        carry_out = plan_tree if args.dry_run else apply_tree
        return await carry_out(services, parsed, Caller(team_uid=args.team), args.factory)

    try:
        plan = asyncio.run(_with_services(settings, run))
    except DefinitionRootError as exc:
        print(f"gateway apply: {exc}", file=sys.stderr)
        return 1
    except InvalidFactoryTree as exc:
        for d in exc.diagnostics:
            print(diagnostic_line(d), file=sys.stderr)
        found = len(exc.diagnostics) + exc.omitted
        more = f" ({exc.omitted} not listed)" if exc.omitted else ""
        print(f"gateway apply: {found} problem(s){more}; nothing changed", file=sys.stderr)
        return 1
    except NotFound as exc:
        print(f"gateway apply: {exc.detail} {_in_store(settings)}", file=sys.stderr)
        return 1
    except ServiceError as exc:
        print(f"gateway apply: {exc.detail}", file=sys.stderr)
        return 1
    _show_plan(plan, args)
    return 0


def _apply_remote(args: argparse.Namespace) -> int:
    """`gateway apply DIR --server URL`: the tree posted to a running gateway."""
    import os
    from pathlib import Path

    import httpx

    from factory_format import DefinitionRootError
    from gateway.platform.factory_files.plan_text import diagnostic_line
    from gateway.platform.factory_files.remote import Refused, post_tree

    key = os.environ.get("GATEWAY_API_KEY", "").strip()
    if not key:
        print("gateway apply: --server needs a user API key in GATEWAY_API_KEY", file=sys.stderr)
        return 2
    if not args.server.startswith(("http://", "https://")):
        print(f"gateway apply: --server: expected an http(s) URL, got {args.server!r}",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        answer = post_tree(
            args.server,
            key,
            Path(args.directory),
            dry_run=args.dry_run,
            team_uid=args.team,
            factory_uid=args.factory,
        )
    except DefinitionRootError as exc:
        print(f"gateway apply: {exc}", file=sys.stderr)
        return 1
    except httpx.HTTPError as exc:
        print(f"gateway apply: {args.server}: {exc}", file=sys.stderr)
        return 1
    if isinstance(answer, Refused):
        for d in answer.diagnostics:
            print(diagnostic_line(d), file=sys.stderr)
        if answer.diagnostics:
            print(f"gateway apply: {len(answer.diagnostics)} problem(s); nothing changed",
                  file=sys.stderr)  # fmt: skip
        else:
            print(f"gateway apply: {answer.status}: {answer.detail}", file=sys.stderr)
        return 1
    _show_plan(answer, args)
    return 0


def _show_plan(plan: msgspec.Struct, args: argparse.Namespace) -> None:
    """The plan as a person reads it (colour on a terminal, unless NO_COLOR), or --json."""
    import os

    from gateway.platform.factory_files.models import Plan
    from gateway.platform.factory_files.plan_text import diagnostic_line, plan_lines

    assert isinstance(plan, Plan)
    for warning in plan.warnings:  # the tree applied (or would) all the same
        print(f"warning: {diagnostic_line(warning)}", file=sys.stderr)
    if args.json:
        _print(plan)
        return
    colour = (
        sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    )
    lines = plan_lines(plan, applied=not args.dry_run, colour=colour)
    sys.stdout.write("\n".join(lines) + "\n")


def _store_file(database_url: str) -> Path | None:
    """The SQLite file a store URL names (a relative path from the current directory); None
    for PostgreSQL and in-memory databases."""
    name = sqlite_file(database_url)
    return None if name is None else Path(name).resolve()


def _missing_store(database_url: str, given: str | None, command: str) -> str | None:
    """Why `command` refuses to run: the SQLite database it would read does not exist (run
    from another directory than the server's, it would otherwise create an empty one, and a
    secret key beside it, and fail on the first team it looks up)."""
    path = _store_file(database_url)
    if path is None or path.exists():
        return None
    source = f"GATEWAY_DATABASE_URL={given}" if given else (
        f"the default GATEWAY_DATABASE_URL, {database_url}, relative to the current directory "
        f"{Path.cwd()}"
    )  # fmt: skip
    remote = (
        ", or post the tree to the server: gateway apply DIR --server URL with GATEWAY_API_KEY"
        if command == "gateway apply"
        else ""
    )
    return (
        f"{command}: no database at {path} ({source}); nothing was created. Run it in the "
        "directory `gateway serve` runs in, or set GATEWAY_DATABASE_URL (in the environment or "
        f"a .env file here) to the server's database{remote}"
    )


def _in_store(settings: Settings) -> str:
    """Which database a lookup that found nothing looked in."""
    from gateway.composition.preflight import masked

    path = _store_file(settings.database_url)
    shown = str(path) if path is not None else masked(settings.database_url)
    return f"(in the database {shown}; GATEWAY_DATABASE_URL names it)"


async def _migrate_only(settings: Settings) -> None:
    services = build_services(settings)
    try:
        await migrate(services.database)
    finally:
        await services.close()


async def _with_services(settings: Settings, run: Callable[[Services], Awaitable[R]]) -> R:
    from gateway.composition import wiring

    services, _consumer = await wiring.start(settings, with_worker=False, serving=False)
    try:
        return await run(services)
    finally:
        await services.close()


def _admin(settings: Settings, args: argparse.Namespace, run: AdminCommand) -> int:
    from gateway.kernel.errors import NotFound, ServiceError

    new_store = _store_file(settings.database_url)
    if new_store is not None and not new_store.exists():  # create-team, demo: the first steps
        print(f"gateway admin {args.admin_command}: a new database at {new_store}",
              file=sys.stderr)  # fmt: skip
    try:
        value = asyncio.run(_with_services(settings, lambda services: run(services, args)))
        if getattr(args, "format", "json") == "env":
            _print_exports(value)
        else:
            _print(value)
    except NotFound as exc:
        print(f"gateway admin: {exc.detail} {_in_store(settings)}", file=sys.stderr)
        return 1
    except ServiceError as exc:
        print(f"gateway admin: {exc.detail}", file=sys.stderr)
        return 1
    return 0


# the admin commands that may start a database where there is none (the first steps)
CREATE_A_STORE = ("create-team", "demo")


def _print(value: msgspec.Struct | JsonObject) -> None:
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")


def _print_exports(value: msgspec.Struct) -> None:
    """`export NAME=value` lines (names upper-cased), quoted for a POSIX shell."""
    import shlex

    for name, item in msgspec.structs.asdict(value).items():
        sys.stdout.write(f"export {name.upper()}={shlex.quote(str(item))}\n")


class TeamCreated(msgspec.Struct):
    team_uid: str


class UserCreated(msgspec.Struct):
    user_uid: str
    api_key: str


class AgentCreated(msgspec.Struct):
    agent_uid: str
    api_key: str


class FactoryCreated(msgspec.Struct):
    uid: str


class ForemanSet(msgspec.Struct):
    uid: str
    foreman_agent_uid: str | None


class SecretSet(msgspec.Struct):
    name: str


class Connected(msgspec.Struct, kw_only=True):
    """The API's answer to a new connection, with `secret` always named (null when the
    gateway generated none)."""

    uid: str
    provider: str
    name: str
    ingress_url: str
    enabled: bool
    created_at: datetime
    secret: str | None
    secret_name: str | msgspec.UnsetType = msgspec.UNSET
    bot: str | msgspec.UnsetType = msgspec.UNSET
    replies: bool
    credentials: list[str] | msgspec.UnsetType = msgspec.UNSET
    api_base_url: str | msgspec.UnsetType = msgspec.UNSET


class Demo(msgspec.Struct, kw_only=True):
    team_uid: str
    user_uid: str
    user_api_key: str
    agent_uid: str
    agent_api_key: str
    factory_uid: str
    secret_name: str


async def _create_team(services: Services, args: argparse.Namespace) -> TeamCreated:
    from gateway.foundation.accounts import identities

    async with services.database.transaction() as conn:
        return TeamCreated(await identities.create_team(conn, args.name))


async def _create_user(services: Services, args: argparse.Namespace) -> UserCreated:
    from gateway.foundation.accounts import identities

    async with services.database.transaction() as conn:
        uid, key = await identities.create_user(conn, args.team, args.email)
    return UserCreated(uid, key)


async def _create_agent(services: Services, args: argparse.Namespace) -> AgentCreated:
    from gateway.foundation.accounts import identities

    async with services.database.transaction() as conn:
        uid, key = await identities.create_agent(conn, args.team, args.name)
    return AgentCreated(uid, key)


async def _create_factory(services: Services, args: argparse.Namespace) -> FactoryCreated:
    from gateway.foundation.accounts import factories

    async with services.database.transaction() as conn:
        uid = await factories.create_factory(conn, args.team, args.name, args.alias, args.foreman)
    return FactoryCreated(uid)


async def _set_foreman(services: Services, args: argparse.Namespace) -> ForemanSet:
    from gateway.platform.factories import foreman

    async with services.database.transaction() as conn:
        await foreman.set_foreman(conn, args.factory, args.agent)
    return ForemanSet(args.factory, args.agent)


async def _set_secret(services: Services, args: argparse.Namespace) -> SecretSet:
    from gateway.foundation.accounts import identities

    async with services.database.transaction() as conn:
        await identities.set_team_secret(
            conn, services.secret_box, args.team, args.name, args.value
        )
    await _secret_changed(services, args.team, args.name)
    return SecretSet(args.name)


async def _secret_changed(services: Services, team_uid: str, name: str) -> None:
    """Webhooks and provider connections that read this managed secret must pick up the new
    value at once."""
    from gateway.webhook_gateway.connections import management as connections
    from gateway.webhook_gateway.webhooks.management import team_secret_changed

    await team_secret_changed(services, team_uid, name)
    async with services.database.transaction() as conn:
        await connections.team_secret_changed(conn, services, team_uid, name)


async def _connect(services: Services, args: argparse.Namespace) -> Connected:
    from gateway.foundation.accounts.identities import require_team
    from gateway.kernel.errors import InvalidRequest
    from gateway.webhook_gateway.connections.management import connect
    from gateway.webhook_gateway.connections.models import ConnectionCreate

    asked = {"provider": args.provider, "name": args.name, "secret_name": args.secret_name}
    asked |= {field: getattr(args, field) for field in CONNECT_VALUES}
    asked |= {field: _read_value(field, getattr(args, f"{field}_file")) for field in CONNECT_FILES}
    try:  # the API's own validation
        spec = msgspec.convert(
            {name: value for name, value in asked.items() if value is not None}, ConnectionCreate
        )
    except msgspec.ValidationError as exc:
        raise InvalidRequest(str(exc)) from exc
    async with services.database.transaction() as conn:
        await require_team(conn, args.team)
        made = await connect(conn, services, args.team, spec)
    return Connected(
        uid=made.uid,
        provider=made.provider,
        name=made.name,
        ingress_url=made.ingress_url,
        enabled=made.enabled,
        created_at=made.created_at,
        secret=made.secret if isinstance(made.secret, str) else None,
        secret_name=made.secret_name,
        bot=made.bot,
        replies=made.replies,
        credentials=made.credentials,
        api_base_url=made.api_base_url,
    )


# `gateway admin connect`: reply credentials that are no secret come as flags; secret ones are
# read from a file (`-`: standard input), so they stay out of the shell's history and `ps`
CONNECT_VALUES = ("app_id", "installation_id", "email", "api_base_url")
CONNECT_FILES = ("api_token", "bot_token", "private_key")


def _read_value(field: str, path: str | None) -> str | None:
    from gateway.kernel.errors import InvalidRequest

    if path is None:
        return None
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"{field}: cannot read {path} ({exc})") from exc
    return text.strip() or None


async def _demo(services: Services, _args: argparse.Namespace) -> Demo:
    """The demo team, made once: a second run finds it (by its factory's alias `demo`),
    reuses it and issues new keys for its user and agent (the old ones keep working), so the
    demo user stays in one team."""
    from sqlalchemy import func, select

    from gateway.foundation.accounts import factories, identities
    from gateway.foundation.store import tables as t

    f = t.factories
    async with services.database.transaction() as conn:
        query = select(f.c.uid, f.c.team_uid, f.c.foreman_agent_uid).where(
            func.lower(f.c.alias) == DEMO_ALIAS
        )
        found = (await conn.execute(query)).first()
        if found is None:
            team = await identities.create_team(conn, "Demo team")
            agent, agent_key = await identities.create_agent(conn, team, "Demo foreman")
            factory = await factories.create_factory(conn, team, "Demo factory", DEMO_ALIAS, agent)
        else:
            team, factory = found.team_uid, found.uid
            if found.foreman_agent_uid is None:
                agent, agent_key = await identities.create_agent(conn, team, "Demo foreman")
                await conn.execute(
                    f.update().where(f.c.uid == factory).values(foreman_agent_uid=agent)
                )
            else:
                agent = found.foreman_agent_uid
                agent_key = await identities.issue_api_key(conn, "agent", agent)
        user, user_key = await identities.create_user(conn, team, DEMO_EMAIL)
        await identities.set_team_secret(
            conn, services.secret_box, team, "demo-secret", "demo-value"
        )
    if found is not None:
        print(
            f"gateway admin demo: the demo team {team} exists already (factory {factory}, alias "
            f"{DEMO_ALIAS!r}): reused; new API keys issued for {DEMO_EMAIL} and the agent "
            f"{agent} (their earlier keys still work)",
            file=sys.stderr,
        )
    return Demo(
        team_uid=team,
        user_uid=user,
        user_api_key=user_key,
        agent_uid=agent,
        agent_api_key=agent_key,
        factory_uid=factory,
        secret_name="demo-secret",  # noqa: S106 -- the secret's name, not its value
    )


DEMO_ALIAS = "demo"
DEMO_EMAIL = "demo@example.com"


CONNECT_OPTIONS = (
    ("api-token-file", "a file holding the GitHub, GitLab or Linear token, or Jira's API token "
     "(- : standard input)"),
    ("app-id", "the GitHub App's id"),
    ("private-key-file", "the GitHub App's private key (.pem)"),
    ("installation-id", "the GitHub App installation's id"),
    ("bot-token-file", "a file holding the Slack bot token (xoxb-...)"),
    ("email", "the Atlassian account of Jira's API token"),
    ("api-base-url", "the API root: GitHub Enterprise, GitLab self-managed, the Jira site"),
)  # fmt: skip
OPTIONAL: tuple[str | tuple[str, str], ...] = (
    *("alias", "foreman", "agent"),  # set-foreman without --agent leaves none
    *(("connect", "name"), ("connect", "secret-name")),
    *(("connect", option) for option, _ in CONNECT_OPTIONS),
)
POSITIONAL = {"provider": tuple(PROVIDER_VERIFIERS)}
AdminCommand = Callable[[Services, argparse.Namespace], Awaitable[msgspec.Struct]]
TEAM = ("team", "uid of the team")
_ADMIN_COMMANDS: list[tuple[str, str, tuple[tuple[str, str], ...], AdminCommand]] = [
    ("create-team", "create a team", (("name", "the team's name"),), _create_team),
    ("create-user", "add a user (new or existing email) to a team; prints an API key",
     (TEAM, ("email", "the user's email")), _create_user),
    ("create-agent", "create an agent of a team; prints its API key",
     (TEAM, ("name", "the agent's name")), _create_agent),
    ("create-factory", "create a factory of a team",
     (TEAM, ("name", "the factory's name"), ("alias", "a short unique alias"),
      ("foreman", "uid of the agent that executes dispatched work")), _create_factory),
    ("set-foreman", "make an agent the factory's foreman (none without --agent)",
     (("factory", "uid of the factory"), ("agent", "uid of an agent of the factory's team")),
     _set_foreman),
    ("set-secret", "create or replace a managed team secret",
     (TEAM, ("name", "the secret's name"), ("value", "the secret")), _set_secret),
    ("connect", "connect a provider for a team; prints its ingress URL (and secret, once)",
     (("provider", "the provider"), TEAM,
      ("name", "the connection's name (default: the provider's)"),
      ("secret-name", "a team secret holding the provider's signing secret"),
      *CONNECT_OPTIONS), _connect),
    ("demo", "a team, user, agent, factory and secret, with their keys", (), _demo),
]  # fmt: skip
