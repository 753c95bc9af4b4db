"""Settings: one frozen object built from an environment mapping, validated at start-up."""

from __future__ import annotations

import base64
import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

from gateway.kernel.attachment_storage import AttachmentStorage, parse_attachment_storage
from gateway.kernel.catalog import (
    BUILTIN_ENVIRONMENTS,
    BUILTIN_MODELS,
    EnvironmentSpec,
    ModelSpec,
    parse_environments,
    parse_models,
)

PREFIX = "GATEWAY_"
Role = Literal["all", "api", "ingress"]
ROLES: tuple[Role, ...] = ("all", "api", "ingress")
# where accepted deliveries are evaluated into runs: a child process of `gateway serve`, inside
# the serving process, or elsewhere (`gateway worker` processes started by the operator)
EvaluatorMode = Literal["process", "inline", "off"]
EVALUATOR_MODES: tuple[EvaluatorMode, ...] = ("process", "inline", "off")
EvaluatorPriority = Literal["idle", "low", "normal"]
EVALUATOR_PRIORITIES: tuple[EvaluatorPriority, ...] = ("idle", "low", "normal")
LogLevel = Literal["debug", "info", "warning", "error"]
LOG_LEVELS: tuple[LogLevel, ...] = ("debug", "info", "warning", "error")
LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")
SqliteSynchronous = Literal["full", "normal"]
SQLITE_SYNCHRONOUS: tuple[SqliteSynchronous, ...] = ("full", "normal")
AccessLog = Literal["on", "all", "off"]
Choice = TypeVar("Choice", bound=str)
Item = TypeVar("Item")
# as Settings holds a store URL: with its driver (GATEWAY_DATABASE_URL may leave it out)
DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./data/gateway.db"
DEFAULT_KEY_FILE = Path("data/secret.key")


class SettingsError(ValueError):
    """A setting is missing or invalid; the message names the variable and the value."""


def in_memory(database_url: str) -> bool:
    if not database_url.startswith("sqlite"):
        return False
    path = database_url.split("://", 1)[-1].lstrip("/")
    return path in ("", ":memory:") or "mode=memory" in database_url


def default_evaluator(database_url: str, uses_redis: bool) -> EvaluatorMode:
    """A process of its own beside the server, which reads what ingress wrote (the Redis
    streams, or the delivery log the embedded backend writes); inline only where no other
    process can read that (an in-memory SQLite database)."""
    return "process" if uses_redis or not in_memory(database_url) else "inline"


# the evaluator's defaults for the default store (a SQLite file) without Redis
EMBEDDED_EVALUATOR = default_evaluator(DEFAULT_DATABASE_URL, uses_redis=False)


@dataclass(frozen=True, slots=True)
class Settings:
    """Each field's default is the one place that default is written: `load_settings` takes it
    from here (`DEFAULTS`) for every variable that is not set."""

    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str | None = None
    redis_prefix: str = "gw"
    # GATEWAY_REDIS_URL names any node of a Redis Cluster; the clients route by hash slot
    redis_cluster: bool = False
    webhook_base_url: str = "http://127.0.0.1:8000"
    webhook_base_url_given: bool = False  # GATEWAY_WEBHOOK_BASE_URL set, not the default
    # where people reach the console and the API (links in replies to providers), when not at
    # the webhook base URL (ingress on hosts of its own)
    public_url: str | None = None
    role: Role = "all"
    secret_key: bytes = b""
    secret_key_source: str = "GATEWAY_SECRET_KEY"  # noqa: S105 -- where the key came from
    trusted_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    egress_ranges: tuple[str, ...] = ("203.0.113.0/24", "2001:db8::/32")
    body_timeout: float = 10.0
    header_timeout: float = 10.0
    # a SQLite store's (and its outbox's) commits: `full` syncs the log to disk before a commit
    # returns, so a 202 and a run survive a power loss; `normal` skips that sync (a process
    # kill loses nothing, a power loss or kernel crash may take the last commits back)
    sqlite_synchronous: SqliteSynchronous = "full"
    # derived from the store and Redis (load_settings applies the same rules to those given)
    evaluator: EvaluatorMode = EMBEDDED_EVALUATOR
    # normal on every backend: a lower priority buys ingress a little CPU on a host with none to
    # spare and costs the end-to-end result on a host shared with other work (at `idle` a busy
    # neighbour took every cycle: no run for 40 s at load 27 on 2 cores; 24 of 160 deliveries
    # turned into runs within 20 s beside eight busy loops at nice 0, 160 of 160 at `normal`).
    # Ingress stays first by the evaluator's own cadence instead (docs/evaluator.md).
    evaluator_priority: EvaluatorPriority = "normal"
    # `idle` also moves the evaluator into a cpu.idle cgroup it creates in the host's cgroup
    # tree, only when the operator asks for it (GATEWAY_EVALUATOR_IDLE_CGROUP=1)
    evaluator_idle_cgroup: bool = False
    auth_failure_limit: int = 10
    # accepted deliveries waiting for the evaluator before ingress answers 503 backlog_full
    max_backlog: int = 100_000
    # embedded backend: de-duplication entries held exactly in memory (older: filters + store)
    dedup_memory: int = 65_536
    # how long a runner's claim on a run lasts without a heartbeat (docs/runs-and-tasks.md)
    run_lease_s: float = 30.0
    # how long a run pinned to a self-hosted worker waits QUEUED for that worker before it fails
    # as worker_unavailable (docs/runs-and-tasks.md#pinned-runs-self-hosted-workers)
    worker_wait_s: float = 3600.0
    # requests per caller per rolling minute to the factory metrics endpoints (then 429)
    metrics_rate_limit: int = 60
    # requests per client address per rolling minute to POST /factory-files/validate, which
    # needs no key (then 429)
    validate_rate_limit: int = 30
    # /readyz fails while the oldest accepted delivery has waited longer for evaluation
    ready_max_lag_s: float = 60.0
    # how often the scheduler looks for due slots of scheduled agents (docs/schedules.md)
    scheduler_poll_s: float = 5.0
    log_level: LogLevel = "info"
    log_format: LogFormat = "text"
    # uvicorn's line per request at info level; "off" at high volume (the delivery log and the
    # metrics already account for every delivery)
    access_log: AccessLog = "on"
    # what runs and agents may select (GATEWAY_MODELS[_FILE], GATEWAY_ENVIRONMENTS[_FILE])
    models: tuple[ModelSpec, ...] = BUILTIN_MODELS
    # factory files naming a model outside `models`: a warning in the plan, or (strict) an
    # error (GATEWAY_STRICT_MODEL_CATALOGUE; docs/configuration.md)
    strict_model_catalogue: bool = False
    environments: tuple[EnvironmentSpec, ...] = BUILTIN_ENVIRONMENTS
    # outbound calls (replies to providers, events) to private, loopback and link-local
    # addresses: refused unless this is set (gateway/foundation/outbound/http.py says why)
    outbound_allow_private: bool = False
    # how long one outbound call may take (a message's lease outlasts it:
    # gateway/foundation/outbound)
    outbound_timeout_s: float = 30.0
    # the wait before a reply's first retry; each next one doubles it (docs/providers.md#replies)
    reply_retry_s: float = 10.0
    # an event subscription whose messages have failed this long without one delivered is
    # disabled, and its owners told in the inbox (docs/events.md)
    event_subscription_disable_after_days: float = 5.0
    # where attachment content is kept, and what may be uploaded (gateway/kernel/attachment_storage)
    attachments: AttachmentStorage = field(default_factory=AttachmentStorage)

    @property
    def uses_redis(self) -> bool:
        return self.redis_url is not None

    @property
    def console_base_url(self) -> str:
        """GATEWAY_PUBLIC_URL, else GATEWAY_WEBHOOK_BASE_URL: the one address of a deployment
        whose API and ingress share a host."""
        return self.public_url or self.webhook_base_url

    @property
    def serves_api(self) -> bool:
        return self.role in ("all", "api")

    @property
    def serves_ingress(self) -> bool:
        return self.role in ("all", "ingress")


DEFAULTS = Settings()


def load_settings(
    environ: Mapping[str, str] | None = None, *, env_file: str | None = ".env"
) -> Settings:
    """Build settings from `environ` (default: os.environ plus an optional .env file); a
    variable not set takes its field's default (GATEWAY_BODY_TIMEOUT -> `body_timeout`)."""
    env = _variables(environ, env_file)
    if env.get("SERVER", "uvicorn").lower() != "uvicorn":  # granian went on 2026-11-27
        raise _fail("SERVER", env["SERVER"], "uvicorn is the only HTTP server; unset it")
    redis_url = _optional_url(env, "redis_url", ("redis://", "rediss://", "unix://"))
    base_url = _optional_url(env, "webhook_base_url", ("http://", "https://"))
    database_url = env.get("DATABASE_URL", DEFAULTS.database_url)
    return Settings(
        database_url=_database_url(database_url),
        redis_url=redis_url,
        redis_prefix=_identifier(env, "redis_prefix"),
        redis_cluster=_redis_cluster(env, redis_url),
        webhook_base_url=base_url or DEFAULTS.webhook_base_url,
        webhook_base_url_given=base_url is not None,
        public_url=_optional_url(env, "public_url", ("http://", "https://")),
        role=_choice(env, "role", ROLES),
        secret_key=_secret_key(env),
        secret_key_source=DEFAULTS.secret_key_source
        if env.get("SECRET_KEY")
        else str(DEFAULT_KEY_FILE),
        trusted_proxies=_networks(env, "TRUSTED_PROXIES"),
        egress_ranges=tuple(str(n) for n in _networks(env, "EGRESS_RANGES"))
        or DEFAULTS.egress_ranges,
        body_timeout=_positive_float(env, "body_timeout"),
        header_timeout=_header_timeout(env),
        sqlite_synchronous=_choice(env, "sqlite_synchronous", SQLITE_SYNCHRONOUS),
        evaluator=_evaluator(env, database_url, redis_url is not None),
        evaluator_priority=_choice(env, "evaluator_priority", EVALUATOR_PRIORITIES),
        evaluator_idle_cgroup=_idle_cgroup(env),
        auth_failure_limit=_positive_int(env, "auth_failure_limit"),
        max_backlog=_positive_int(env, "max_backlog"),
        dedup_memory=_positive_int(env, "dedup_memory"),
        run_lease_s=_positive_float(env, "run_lease_s"),
        worker_wait_s=_positive_float(env, "worker_wait_s"),
        metrics_rate_limit=_positive_int(env, "metrics_rate_limit"),
        validate_rate_limit=_positive_int(env, "validate_rate_limit"),
        ready_max_lag_s=_positive_float(env, "ready_max_lag_s"),
        scheduler_poll_s=_positive_float(env, "scheduler_poll_s"),
        log_level=_choice(env, "log_level", LOG_LEVELS),
        log_format=_choice(env, "log_format", LOG_FORMATS),
        access_log=_choice(env, "access_log", ("on", "all", "off")),
        models=_catalog(env, "MODELS", lambda text, _: parse_models(text)) or DEFAULTS.models,
        strict_model_catalogue=_choice(
            env,
            "strict_model_catalogue",
            ("0", "1"),
            "1" if DEFAULTS.strict_model_catalogue else "0",
        )
        == "1",
        environments=_catalog(env, "ENVIRONMENTS", parse_environments) or DEFAULTS.environments,
        attachments=_attachments(env),
        outbound_allow_private=_choice(env, "outbound_allow_private", ("0", "1"), "0") == "1",
        outbound_timeout_s=_positive_float(env, "outbound_timeout_s"),
        reply_retry_s=_positive_float(env, "reply_retry_s"),
        event_subscription_disable_after_days=_positive_float(
            env, "event_subscription_disable_after_days"
        ),
    )


def _attachments(env: Mapping[str, str]) -> AttachmentStorage:
    try:
        return parse_attachment_storage(env)
    except ValueError as exc:
        raise SettingsError(f"{PREFIX}{exc}") from exc


def _redis_cluster(env: Mapping[str, str], redis_url: str | None) -> bool:
    value = env.get("REDIS_CLUSTER", "").strip()
    if value not in ("0", "1", ""):
        raise SettingsError(f"GATEWAY_REDIS_CLUSTER must be 0 or 1, not {value!r}")
    if value == "1" and (redis_url is None or redis_url.startswith("unix://")):
        raise SettingsError("GATEWAY_REDIS_CLUSTER=1 needs GATEWAY_REDIS_URL naming a TCP node")
    return DEFAULTS.redis_cluster if value == "" else value == "1"


def _catalog(
    env: Mapping[str, str], name: str, parse: Callable[[str, datetime], tuple[Item, ...]]
) -> tuple[Item, ...]:
    """A list given inline (GATEWAY_<NAME>) or as a file (GATEWAY_<NAME>_FILE); empty when
    neither is set. A file's entries are as old as the file."""
    inline, path = env.get(name, "").strip(), env.get(f"{name}_FILE", "").strip()
    if inline and path:
        raise _fail(f"{name}_FILE", path, f"give {PREFIX}{name} or {PREFIX}{name}_FILE, not both")
    if not (inline or path):
        return ()
    if inline:
        text, written_at, where = inline, datetime.now(UTC), name
    else:
        where = f"{name}_FILE"
        try:
            text = Path(path).read_text()
            written_at = datetime.fromtimestamp(Path(path).stat().st_mtime, UTC)
        except (OSError, UnicodeDecodeError) as exc:
            raise _fail(where, path, f"cannot read it ({exc})") from exc
    try:
        return parse(text, written_at)
    except ValueError as exc:
        raise _fail(where, path or _shortened(inline), str(exc)) from exc


def _shortened(value: str) -> str:
    return value if len(value) <= 80 else value[:77] + "..."


def _fail(name: str, value: str, why: str) -> SettingsError:
    return SettingsError(f"{PREFIX}{name}={value!r}: {why}")


def _read_env_file(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip().strip("'\"")
    return out


def database_url_setting(
    environ: Mapping[str, str] | None = None, *, env_file: str | None = ".env"
) -> tuple[str, str | None]:
    """(the store URL as `load_settings` reads it, GATEWAY_DATABASE_URL as given or None when
    the default applies), without the rest of the settings: what a command checks before
    anything is created (the default secret key file, a new SQLite file)."""
    given = _variables(environ, env_file).get("DATABASE_URL")
    return _database_url(given or DEFAULTS.database_url), given


def _variables(environ: Mapping[str, str] | None, env_file: str | None) -> dict[str, str]:
    """The GATEWAY_* variables (prefix removed): `environ`, else os.environ over the .env
    file."""
    values: dict[str, str] = {}
    if env_file and environ is None and Path(env_file).is_file():
        values.update(_read_env_file(Path(env_file)))
    values.update(os.environ if environ is None else environ)
    return {k[len(PREFIX) :]: v for k, v in values.items() if k.startswith(PREFIX)}


def _database_url(value: str) -> str:
    if value.startswith(("postgresql://", "postgres://")):
        return "postgresql+asyncpg://" + value.split("://", 1)[1]
    if value.startswith(("postgresql+asyncpg://", "sqlite+aiosqlite://")):
        return value
    if value.startswith("sqlite://"):
        return "sqlite+aiosqlite://" + value[len("sqlite://") :]
    raise _fail("DATABASE_URL", value, "expected a sqlite:/// or postgresql:// URL")


def _optional_url(env: Mapping[str, str], field: str, schemes: tuple[str, ...]) -> str | None:
    name = field.upper()
    value = env.get(name, "").strip()
    if not value:
        return None
    if not value.startswith(schemes):
        raise _fail(name, value, f"expected a URL starting with one of {', '.join(schemes)}")
    return value.rstrip("/")


def _identifier(env: Mapping[str, str], field: str) -> str:
    name = field.upper()
    value: str = env.get(name, getattr(DEFAULTS, field))
    if not value or not all(c.isalnum() or c in "-_:" for c in value):
        raise _fail(name, value, "use letters, digits, '-', '_' or ':'")
    return value


def _evaluator(env: Mapping[str, str], database_url: str, uses_redis: bool) -> EvaluatorMode:
    default = default_evaluator(database_url, uses_redis)
    mode = _choice(env, "evaluator", EVALUATOR_MODES, default)
    if mode == "process" and default != "process":
        raise _fail("EVALUATOR", mode, "'process' cannot read an in-memory database; use inline")
    return mode


def _idle_cgroup(env: Mapping[str, str]) -> bool:
    """GATEWAY_EVALUATOR_IDLE_CGROUP=1: the operator lets the gateway write the host's cgroup
    tree (a `cpu.idle` group for the evaluator); only with GATEWAY_EVALUATOR_PRIORITY=idle."""
    value = env.get("EVALUATOR_IDLE_CGROUP", "").strip()
    if value not in ("0", "1", ""):
        raise _fail("EVALUATOR_IDLE_CGROUP", value, "expected 0 or 1")
    if value != "1":
        return DEFAULTS.evaluator_idle_cgroup
    if env.get("EVALUATOR_PRIORITY", "").strip().lower() != "idle":
        raise _fail(
            "EVALUATOR_IDLE_CGROUP", value, "needs GATEWAY_EVALUATOR_PRIORITY=idle (its cgroup)"
        )
    return True


def _header_timeout(env: Mapping[str, str]) -> float:
    """Seconds a sender has to deliver the request line and headers (at most a minute: a
    longer wait only helps those who trickle heads)."""
    value = _positive_float(env, "header_timeout")
    if not 0.001 <= value <= 60:
        raise _fail("HEADER_TIMEOUT", str(env["HEADER_TIMEOUT"]), "expected 0.001 to 60 seconds")
    return value


def _secret_key(env: Mapping[str, str]) -> bytes:
    """32 bytes used to encrypt webhook secrets at rest and to sign cursors."""
    value = env.get("SECRET_KEY", "")
    if not value:
        return _default_secret_key()
    try:
        key = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except ValueError as exc:
        raise _fail("SECRET_KEY", "<hidden>", "expected url-safe base64") from exc
    if len(key) != 32:
        raise _fail("SECRET_KEY", "<hidden>", "expected 32 bytes of url-safe base64 (44 chars)")
    return key


def _default_secret_key() -> bytes:
    """Embedded default: a key file beside the SQLite data, created once and kept private."""
    path = DEFAULT_KEY_FILE
    if path.is_file():
        return base64.urlsafe_b64decode(path.read_bytes().strip())
    path.parent.mkdir(parents=True, exist_ok=True)
    key = os.urandom(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(base64.urlsafe_b64encode(key))
    return key


def _networks(
    env: Mapping[str, str], name: str
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    value = env.get(name, "").strip()
    if not value:
        return ()
    try:
        return tuple(ipaddress.ip_network(p.strip(), strict=False) for p in value.split(","))
    except ValueError as exc:
        raise _fail(name, value, "expected comma-separated IP addresses or CIDR ranges") from exc


def _positive_float(env: Mapping[str, str], field: str) -> float:
    name = field.upper()
    value = env.get(name)
    if value is None:
        return float(getattr(DEFAULTS, field))
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number > 0:
        raise _fail(name, value, "expected a positive number of seconds")
    return number


def _positive_int(env: Mapping[str, str], field: str) -> int:
    name = field.upper()
    value = env.get(name)
    if value is None:
        return int(getattr(DEFAULTS, field))
    if not value.isdigit() or int(value) < 1:
        raise _fail(name, value, "expected a positive whole number")
    return int(value)


def _choice(
    env: Mapping[str, str],
    field: str,
    choices: tuple[Choice, ...],
    default: Choice | None = None,
) -> Choice:
    """One of `choices` (matched case-insensitively), typed as narrowly as they are; unset:
    `default`, else the field's own default."""
    name = field.upper()
    value = env.get(name, default or getattr(DEFAULTS, field)).lower()
    for choice in choices:
        if value == choice:
            return choice
    raise _fail(name, value, f"expected one of {', '.join(choices)}")
