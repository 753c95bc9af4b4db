"""Every table of the store. Migrations in migrations/versions create exactly these."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from gateway.foundation.store.types import UTCDateTime

metadata = MetaData()

# --- identities -----------------------------------------------------------------------------

teams = Table(
    "teams",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

users = Table(
    "users",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("email", String(320), nullable=False, unique=True),
    Column("display_name", String(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

team_members = Table(
    "team_members",
    metadata,
    Column("team_uid", String(64), ForeignKey("teams.uid"), primary_key=True),
    Column("user_uid", String(64), ForeignKey("users.uid"), primary_key=True),
    Index("ix_team_members_user", "user_uid"),
)

agents = Table(
    "agents",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("team_uid", String(64), ForeignKey("teams.uid"), nullable=False, index=True),
    Column("name", String(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("description", Text, nullable=True),
    Column("agent_type", String(16), nullable=True),
    # the factory the agent works for besides its foreman (no foreign key: factories refer to
    # agents already, and a cycle of keys would make either row impossible to delete first)
    Column("factory_uid", String(64), nullable=True, index=True),
    # defaults for the runs it executes: prompt, base_model, environment_id, worker_host,
    # credential_strategy, mcp_servers, skills, secrets (docs/api.md)
    Column("run_defaults", JSON, nullable=True),
    # nullable only because SQLite cannot add a NOT NULL column without a constant default;
    # migration 0003 fills it for older agents and every write sets it
    Column("updated_at", UTCDateTime, nullable=True),
    # an agent a factory's definition files declare (agents/<definition_name>/agent.md of the
    # factory `factory_uid`), with what its file says beyond the columns: credential strategy,
    # its own run configuration layer, skills, the resolved configuration (docs/factory-files.md)
    Column("definition_name", String(200), nullable=True),
    Column("definition", JSON, nullable=True),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("key_hash", String(64), primary_key=True),
    Column("kind", String(16), nullable=False),  # "user" | "agent"
    Column("principal_uid", String(64), nullable=False, index=True),
    Column("created_at", UTCDateTime, nullable=False),
)

# A console login (docs/console.md): the cookie holds a random session id, this table its hash.
# Logging out deletes the row, so the cookie stops working at once, not when it expires.
console_sessions = Table(
    "console_sessions",
    metadata,
    Column("id_hash", String(64), primary_key=True),
    Column("expires_at", UTCDateTime, nullable=False, index=True),
)

team_secrets = Table(
    "team_secrets",
    metadata,
    Column("team_uid", String(64), ForeignKey("teams.uid"), primary_key=True),
    Column("name", String(200), primary_key=True),
    Column("value_encrypted", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

factories = Table(
    "factories",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("team_uid", String(64), ForeignKey("teams.uid"), nullable=False, index=True),
    Column("name", String(200), nullable=False),
    Column("alias", String(200), nullable=True),
    Column("foreman_agent_uid", String(64), ForeignKey("agents.uid"), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # what factory.yaml declares (migration 0015; docs/factory-files.md): set by apply, None on
    # a factory no definition was applied to. JSON columns hold factory_format's comparable
    # forms: repositories [{owner, name}], secrets [name], mcp_servers {name: warpId},
    # cloud_providers {gcp?, aws?}, integrations [{type, ...}] (None: left to the server),
    # agent_defaults (a run configuration layer), code_forges ["GITHUB" | "GITLAB"]
    Column("description", Text, nullable=True),
    Column("credential_strategy", String(16), nullable=True),
    Column("repositories", JSON, nullable=True),
    Column("secrets", JSON, nullable=True),
    Column("mcp_servers", JSON, nullable=True),
    Column("cloud_providers", JSON, nullable=True),
    Column("integrations", JSON, nullable=True),
    Column("agent_defaults", JSON, nullable=True),
    Column("code_forges", JSON, nullable=True),
    Column("schema_version", String(32), nullable=True),
    Column("definition_applied_at", UTCDateTime, nullable=True),
)

# --- webhooks, automations, deliveries ------------------------------------------------------

webhooks = Table(
    "webhooks",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("factory_uid", String(64), ForeignKey("factories.uid"), nullable=False, index=True),
    Column("name", String(200), nullable=False),
    Column("auth_mode", String(16), nullable=False),
    Column("signature_scheme", String(32), nullable=True),
    # token modes keep a SHA-256 of the token; signature mode keeps the secret encrypted
    Column("token_hash", String(64), nullable=True),
    Column("secret_encrypted", Text, nullable=True),
    Column("secret_name", String(200), nullable=True),
    Column("delivery_id_header", String(200), nullable=True),
    Column("enabled", Boolean, nullable=False),
    Column("config_version", Integer, nullable=False),
    Column("definition_name", String(200), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("deleted_at", UTCDateTime, nullable=True),
)

automations = Table(
    "automations",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("factory_uid", String(64), ForeignKey("factories.uid"), nullable=False, index=True),
    Column("name", String(200), nullable=False),
    Column("prompt", Text, nullable=False),
    Column("enabled", Boolean, nullable=False),
    # every trigger in factory_format's canonical form (aliases rewritten, matchers as
    # {in, not_in, by_name}, a webhook payload pattern beside the filter), whether written by
    # the API or a definition file; automation_triggers indexes the webhook ones
    Column("triggers", JSON, nullable=False),
    Column("definition_name", String(200), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # the agent its runs go to (None: the factory's foreman), and the configuration they carry
    # in runs.agent_config (None: nothing); a file automation's are resolved from its layers
    Column("agent_uid", String(64), nullable=True),
    Column("agent_config", JSON, nullable=True),
    # a file automation's run configuration layer and resolved configuration ({config,
    # effective}, factory_format's comparable forms)
    Column("definition", JSON, nullable=True),
)

# One row per webhook a trigger listens to: the webhook and the trigger's payload filter (JSON,
# None = match all). `position` orders the rows of an automation.
automation_triggers = Table(
    "automation_triggers",
    metadata,
    Column("automation_uid", String(64), ForeignKey("automations.uid"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("webhook_uid", String(64), nullable=False, index=True),
    Column("payload_filter", JSON, nullable=True),
)

# A team's connection to a provider (GitHub, GitLab, Slack, Linear, Jira): the provider's native
# webhooks arrive at /webhooks/p/{uid}, are verified with the provider's own scheme, and start the
# provider triggers of every factory of the team. Its deliveries share the delivery log with
# custom webhooks (`deliveries.webhook_uid` holds the connection uid). `bot`: the connection's
# own account (GitLab bot username, Slack bot user id, Jira agent account id), for the events
# that depend on it.
provider_connections = Table(
    "provider_connections",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("team_uid", String(64), ForeignKey("teams.uid"), nullable=False, index=True),
    Column("provider", String(16), nullable=False),
    Column("name", String(200), nullable=False),
    Column("secret_encrypted", Text, nullable=True),
    Column("secret_name", String(200), nullable=True),
    Column("bot", String(200), nullable=True),
    # what replies are posted with (gateway/webhook_gateway/replies/credentials.py: encrypted JSON),
    # where, and the connection's own reply templates; all NULL for a connection that only receives
    Column("credentials_encrypted", Text, nullable=True),
    Column("api_base_url", String(500), nullable=True),
    Column("reply_templates", JSON, nullable=True),
    Column("enabled", Boolean, nullable=False),
    Column("config_version", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("deleted_at", UTCDateTime, nullable=True),
)

# The inline `schedule` triggers of automations (`schedule` / `cron_fired`), one row per schedule
# (`name`: its name within the automation, "" for the unnamed one), written whenever the
# automation's triggers are. The scheduler claims a slot by moving `next_run_at` on
# (docs/schedules.md); the automation's `enabled` decides whether it fires.
automation_schedules = Table(
    "automation_schedules",
    metadata,
    Column("automation_uid", String(64), primary_key=True),
    Column("name", String(200), primary_key=True),
    Column("cron", String(200), nullable=False),
    Column("next_run_at", UTCDateTime, nullable=True, index=True),
    Column("last_ran_at", UTCDateTime, nullable=True),
    Column("last_run_id", String(64), nullable=True),
    Column("last_spawn_error", String(2000), nullable=True),
)

# The webhook delivery log: every outcome, the payload of accepted deliveries. `evaluation` is
# "pending" until the evaluator has matched an accepted delivery against the automations (the
# embedded backend writes accepted deliveries here before its 202, so this table is also its
# durable queue), then "evaluated"; None for deliveries that are not evaluated (rejected,
# duplicate). A delivery that started runs also holds their event-payload.json.
deliveries = Table(
    "deliveries",
    metadata,
    Column("delivery_id", String(64), primary_key=True),
    Column("webhook_uid", String(64), nullable=False),
    Column("received_at", UTCDateTime, nullable=False),
    Column("size", Integer, nullable=False),
    Column("label", String(40), nullable=False),
    Column("identity", String(300), nullable=True),
    Column("duplicate_of", String(64), nullable=True),
    Column("payload", LargeBinary, nullable=True),
    Column("evaluation", String(16), nullable=True),
    Column("evaluated_at", UTCDateTime, nullable=True),
    # JSON: the evaluator's decision for an accepted delivery (docs/ingress.md, "Outcome trace")
    Column("trace", LargeBinary, nullable=True),
    # rejected: why (gateway/kernel/rejections.py); accepted: request headers, redacted, as an HTTP
    # header block (gateway/webhook_gateway/ingress/stored_headers.py); both since migration 0007
    Column("reason", String(32), nullable=True),
    Column("headers", LargeBinary, nullable=True),
    Index("ix_deliveries_webhook_received", "webhook_uid", "received_at"),
    # pruning past the retention reads only the old deliveries (migration 0013)
    Index("ix_deliveries_received", "received_at"),
    # (ix_deliveries_identity, by webhook and identity, is the embedded backend's: made when it
    # starts, gateway/foundation/backends/identity_index.py)
    Index(
        "ix_deliveries_pending",
        "received_at",
        "delivery_id",
        sqlite_where=text("evaluation = 'pending'"),
        postgresql_where=text("evaluation = 'pending'"),
    ),
)

# A delivery made by replaying a stored one (its row in `deliveries` is written by the ingress
# backend like any other): which delivery it replays, and the Idempotency-Key it was asked with.
delivery_replays = Table(
    "delivery_replays",
    metadata,
    Column("delivery_id", String(64), primary_key=True),
    Column("webhook_uid", String(64), nullable=False),
    Column("replay_of", String(64), nullable=False, index=True),
    Column("idempotency_key", String(200), nullable=True),
    Column("requested_by", String(64), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ux_delivery_replays_key", "webhook_uid", "idempotency_key", unique=True),
)

# One row, bumped by database triggers (migration 0002) on every change to webhooks, factories,
# automations and their triggers: the evaluator's cached configuration is checked against it.
config_revision = Table(
    "config_revision",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("value", BigInteger, nullable=False),
)

# --- runs, conversations, tasks -------------------------------------------------------------

runs = Table(
    "runs",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("team_uid", String(64), nullable=True, index=True),
    # looked up by ix_runs_factory_created, below (migration 0028)
    Column("factory_uid", String(64), nullable=True),
    Column("conversation_id", String(64), nullable=False, index=True),
    Column("parent_run_id", String(64), nullable=True),
    # a root run's is its own run_id; looked up by ix_runs_root_run_id, below (migration 0029)
    Column("root_run_id", String(64), nullable=False),
    Column("title", String(500), nullable=True),
    Column("prompt", Text, nullable=False),
    Column("state", String(16), nullable=False),
    Column("source", String(32), nullable=False),
    Column("run_type", String(16), nullable=False),  # "cloud" | "local" | "ci"
    Column("creator_kind", String(16), nullable=True),  # "user" | "agent"
    Column("creator_uid", String(64), nullable=True),
    Column("agent_config", JSON, nullable=True),
    Column("metadata", JSON, nullable=True),
    Column("status_message", JSON, nullable=True),
    Column("session_id", String(64), nullable=True),
    Column("session_link", String(500), nullable=True),
    Column("ticket_ref", String(200), nullable=True),
    Column("ticket_url", String(2000), nullable=True),
    Column("artifacts", JSON, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("started_at", UTCDateTime, nullable=True),
    # a factory run whose task is still to be created (asynchronously, after the dispatch)
    Column("task_pending", Boolean, nullable=False, server_default=text("false")),
    # a run an automation started for a webhook delivery: one per (delivery, automation)
    Column("delivery_id", String(64), nullable=True),
    Column("automation_uid", String(64), nullable=True),
    # the agent that executes the run: a factory's foreman for work dispatched to the factory,
    # the calling agent for a run created with an agent key; None for a user's own run
    Column("agent_uid", String(64), nullable=True),
    # the mode of its first execution (a scheduled agent's `mode`); None is normal
    Column("mode", String(16), nullable=True),
    # when the run last entered FAILED: the debug window of a setup failure runs from here
    Column("failed_at", UTCDateTime, nullable=True),
    # execution by a runner (docs/runs-and-tasks.md): who holds the run, until when, how often
    # it was claimed, and when the holder last renewed (interrupts after it are news to it)
    Column("runner_uid", String(64), nullable=True),
    Column("lease_expires_at", UTCDateTime, nullable=True),
    Column("lease_renewed_at", UTCDateTime, nullable=True),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    # the self-hosted worker (runners.worker_id) the run is pinned to; null: the team's pool
    Column("worker_host", String(200), nullable=True),
    # a debug session of a failed run: "requested" of debug_runner_uid (the runner that ran
    # it), then "open" while that runner holds it; null when there is none
    Column("debug_session", String(16), nullable=True),
    Column("debug_runner_uid", String(64), nullable=True),
    # the work item (work_items) the run belongs to: what its provider event was about
    Column("work_item_id", String(64), nullable=True),
    Index("ux_runs_delivery_automation", "delivery_id", "automation_uid", unique=True),
    # partial: most runs are roots, and few wait for their task (an entry per run in each of
    # these indexes was a write per run for nothing)
    Index(
        "ix_runs_parent_run_id",
        "parent_run_id",
        sqlite_where=text("parent_run_id IS NOT NULL"),
        postgresql_where=text("parent_run_id IS NOT NULL"),
    ),
    # a tree's descendants (cancelling it); a root is found by its run_id
    Index(
        "ix_runs_root_run_id",
        "root_run_id",
        sqlite_where=text("parent_run_id IS NOT NULL"),
        postgresql_where=text("parent_run_id IS NOT NULL"),
    ),
    Index(
        "ix_runs_task_pending",
        "task_pending",
        sqlite_where=text("task_pending = 1"),
        postgresql_where=text("task_pending"),
    ),
    Index(
        "ix_runs_work_item_id",
        "work_item_id",
        sqlite_where=text("work_item_id IS NOT NULL"),
        postgresql_where=text("work_item_id IS NOT NULL"),
    ),
    # what runners claim (oldest first) and what holds a lease: small sets of a large table
    Index(
        "ix_runs_queued",
        "team_uid",
        "created_at",
        sqlite_where=text("state = 'QUEUED'"),
        postgresql_where=text("state = 'QUEUED'"),
    ),
    Index(
        "ix_runs_leased",
        "lease_expires_at",
        sqlite_where=text("lease_expires_at IS NOT NULL"),
        postgresql_where=text("lease_expires_at IS NOT NULL"),
    ),
    # the public shared-session lookup (few runs have a session id until they run)
    Index(
        "ix_runs_session_id",
        "session_id",
        sqlite_where=text("session_id IS NOT NULL"),
        postgresql_where=text("session_id IS NOT NULL"),
    ),
    # a factory's runs over a date range, with what run metrics group by (PostgreSQL answers
    # from the index alone)
    Index(
        "ix_runs_factory_created",
        "factory_uid",
        "created_at",
        postgresql_include=["creator_kind", "creator_uid", "state", "source", "agent_uid"],
    ),
)

run_messages = Table(
    "run_messages",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("run_id", String(64), ForeignKey("runs.run_id"), nullable=False, index=True),
    Column("message", Text, nullable=False),
    Column("attachments", JSON, nullable=True),
    Column("mode", String(32), nullable=True),
    Column("routing", String(16), nullable=False),  # "queued" | "injected" | "resumed" ...
    Column("created_at", UTCDateTime, nullable=False),
    # what the agent did, as its runner reported it: {"type": "read_skill", "input": {...}}
    Column("action", JSON, nullable=True),
)

attachments = Table(
    "attachments",
    metadata,
    Column("attachment_id", String(64), primary_key=True),
    Column("conversation_id", String(64), nullable=False, index=True),
    Column("run_id", String(64), nullable=False),
    Column("file_name", String(300), nullable=True),
    # stored content, when the service holds it (a webhook run's event-payload.json)
    Column("content_type", String(100), nullable=True),
    Column("size", Integer, nullable=True),
    Column("content", LargeBinary, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    # a webhook run's event-payload.json: the content is the delivery's payload, stored once
    Column("delivery_id", String(64), nullable=True),
    # content uploaded to its prepared upload URL (or sent with the run): its key in the
    # attachment store (gateway/foundation/blobs), and when it arrived; null until then
    Column("blob_key", String(200), nullable=True),
    Column("uploaded_at", UTCDateTime, nullable=True),
)

# Content the service stores itself, by key (gateway/foundation/blobs: the `database` attachment
# store)
blobs = Table(
    "blobs",
    metadata,
    Column("key", String(200), primary_key=True),
    Column("content", LargeBinary, nullable=False),
    Column("size", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

tasks = Table(
    "tasks",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("factory_uid", String(64), ForeignKey("factories.uid"), nullable=False, index=True),
    Column("title", String(500), nullable=False),
    Column("description", Text, nullable=True),
    Column("stage", String(16), nullable=False),
    Column("conversation_id", String(64), nullable=False),
    Column("created_by_uid", String(64), nullable=True),
    Column("ticket_source", String(64), nullable=True),
    Column("ticket_id", String(200), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("deleted_at", UTCDateTime, nullable=True),
    # a conversation is bound to at most one live task, across all factories
    Index(
        "ux_tasks_live_conversation",
        "conversation_id",
        unique=True,
        sqlite_where=text("deleted_at IS NULL"),
        postgresql_where=text("deleted_at IS NULL"),
    ),
)

# What a provider event's runs are about (docs/providers.md#work-items): one per factory and
# source (provider, ref), its reply `target` (gateway.webhook_gateway.replies.targets, as JSON), its
# stage, and the run later activity about the same thing continues (`run_id`).
work_items = Table(
    "work_items",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("team_uid", String(64), nullable=False),
    Column("factory_uid", String(64), ForeignKey("factories.uid"), nullable=False),
    Column("provider", String(16), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("ref", String(500), nullable=False),
    Column("url", String(2000), nullable=True),
    Column("target", JSON, nullable=True),
    Column("stage", String(16), nullable=False),
    Column("run_id", String(64), nullable=True),
    Column("followup_count", Integer, nullable=False, server_default=text("0")),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # by ref first: the evaluator looks work items up by the refs of a batch
    UniqueConstraint("ref", "provider", "factory_uid", name="ux_work_items_source"),
    Index("ix_work_items_factory_created", "factory_uid", "created_at"),
)

# The deliveries that continued a work item (a follow-up of its run), one each
work_item_follow_ups = Table(
    "work_item_follow_ups",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("work_item_id", String(64), ForeignKey("work_items.id"), nullable=False),
    Column("run_id", String(64), nullable=False),
    Column("delivery_id", String(64), nullable=False),
    # the provider's message when one event comes as several deliveries (Slack sends a mention
    # of the app in a thread as `app_mention` and as `message`): one follow-up per message
    Column("message_ref", String(200), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("work_item_id", "delivery_id", name="ux_work_item_follow_ups"),
    Index("ix_work_item_follow_ups_message", "message_ref"),
    Index("ix_work_item_follow_ups_delivery", "delivery_id"),
)

task_outputs = Table(
    "task_outputs",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("task_uid", String(64), ForeignKey("tasks.uid"), nullable=False, index=True),
    Column("kind", String(32), nullable=False),
    Column("title", String(500), nullable=True),
    Column("url", String(2000), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
)

# --- execution: runners, run timeline, artifacts, usage --------------------------------------

# A self-hosted worker (`gateway runner`) of a team; present while it keeps calling in.
runners = Table(
    "runners",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("team_uid", String(64), nullable=False, index=True),
    Column("agent_uid", String(64), nullable=False),
    Column("name", String(200), nullable=False),
    Column("host", String(200), nullable=True),
    Column("factory_uid", String(64), nullable=True),  # claims only this factory's runs
    Column("concurrency", Integer, nullable=False),
    Column("version", String(64), nullable=True),
    Column("started_at", UTCDateTime, nullable=False),
    Column("last_seen_at", UTCDateTime, nullable=False),
    # a self-hosted worker's stable id (runs pin to it by worker_host); null: a pool runner
    Column("worker_id", String(200), nullable=True),
    # it opens debug sessions of the runs it failed (docs/runs-and-tasks.md)
    Column("debug_sessions", Boolean, nullable=False, server_default=text("false")),
    Index("ix_runners_worker_id", "team_uid", "worker_id"),
)

# Every state change a run makes after it was queued (its creation is the first entry).
run_events = Table(
    "run_events",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("run_id", String(64), nullable=False, index=True),
    Column("state", String(16), nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Column("runner_uid", String(64), nullable=True),
    Column("reason", String(500), nullable=True),
)

# What a run produced: FILE (content stored here), PULL_REQUEST (url, branch, title, state) and
# its TRANSCRIPT. Pull requests are de-duplicated by url where they are counted.
run_artifacts = Table(
    "run_artifacts",
    metadata,
    Column("artifact_uid", String(64), primary_key=True),  # a UUID, as clients expect
    Column("run_id", String(64), nullable=False, index=True),
    Column("artifact_type", String(16), nullable=False),
    Column("filename", String(300), nullable=True),
    Column("filepath", String(1000), nullable=True),
    Column("mime_type", String(100), nullable=True),
    Column("size", Integer, nullable=True),
    Column("content", LargeBinary, nullable=True),
    Column("title", String(500), nullable=True),
    Column("description", String(2000), nullable=True),
    Column("url", String(2000), nullable=True, index=True),
    Column("branch", String(300), nullable=True),
    Column("pr_state", String(16), nullable=True),  # open | closed | merged
    Column("created_at", UTCDateTime, nullable=False),
)

USAGE_FIGURES = ["model_id", "cost_usd", "input_tokens", "output_tokens"]

# Usage a runner reported: one row per (report, cost component); each report adds to the run's.
run_usage = Table(
    "run_usage",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("run_id", String(64), nullable=False, index=True),
    Column("model_id", String(200), nullable=True),
    Column("input_tokens", Integer, nullable=False),
    Column("output_tokens", Integer, nullable=False),
    Column("component", String(64), nullable=False),
    Column("cost_usd", Float, nullable=False),
    Column("reported_at", UTCDateTime, nullable=False),
    # each report is a cumulative snapshot of one claim attempt's usage of one model, replacing
    # that attempt's earlier rows of the model; `unreported`: the metrics it did not carry
    # ("input_tokens,output_tokens,cost_usd"), stored as 0 and read as unavailable
    Column("attempt", Integer, nullable=True),
    Column("unreported", String(64), nullable=True),
    # copied from the run (fixed at its creation), so spend is windowed and grouped without a
    # join: the run's factory, creation time, tree, source, the user who started it, its agent
    Column("factory_uid", String(64), nullable=True),
    Column("run_created_at", UTCDateTime, nullable=True),
    Column("root_run_id", String(64), nullable=True),
    Column("source", String(32), nullable=True),
    Column("user_uid", String(64), nullable=True),
    Column("agent_uid", String(64), nullable=True),
    Index(
        "ix_run_usage_factory_created",
        "factory_uid",
        "run_created_at",
        postgresql_include=[*USAGE_FIGURES, "source", "user_uid", "agent_uid"],
    ),
    Index("ix_run_usage_root", "root_run_id", postgresql_include=["component", "cost_usd"]),
)

# what PR metrics read of each PR besides its factory and first appearance
PR_FIGURES = ["url", "root_created_at", "state", "additions", "deletions", "cost_usd"]

# One row per pull request a run produced, written when its URL first appears among the run
# artifacts (later artifacts of the URL update title, branch and state): the de-duplicated PRs
# that metrics count and list. `root_run_id` is the run tree its cost is attributed to. The
# detail columns come from code-forge `pull_request` webhook payloads; None until one arrived.
pull_requests = Table(
    "pull_requests",
    metadata,
    Column("url", String(2000), primary_key=True),
    Column("factory_uid", String(64), nullable=True),
    Column("team_uid", String(64), nullable=True),
    Column("run_id", String(64), nullable=False),
    Column("root_run_id", String(64), nullable=False, index=True),
    Column("root_created_at", UTCDateTime, nullable=False),  # PR latency starts here
    Column("artifact_uid", String(64), nullable=False),
    Column("first_seen_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("title", String(500), nullable=True),
    Column("branch", String(300), nullable=True),
    Column("state", String(16), nullable=True),  # open | closed | merged
    Column("additions", Integer, nullable=True),
    Column("deletions", Integer, nullable=True),
    Column("changed_files", Integer, nullable=True),
    Column("merged_at", UTCDateTime, nullable=True),
    Column("detail_updated_at", UTCDateTime, nullable=True),
    # the attributed cost (docs/metrics.md): the tree's spend over its PR count, kept current
    # by pr_costs.refresh_tree whenever the tree reports usage or produces a PR
    Column("tree_pr_count", Integer, nullable=False, server_default=text("1")),
    Column("cost_usd", Float, nullable=False, server_default=text("0")),
    Index(
        "ix_pull_requests_factory_seen",
        "factory_uid",
        "first_seen_at",
        postgresql_include=[*PR_FIGURES],
    ),
    Index("ix_pull_requests_factory_updated", "factory_uid", "updated_at"),
)

# A PR's attributed cost per cost component (the sum is pull_requests.cost_usd), with the PR's
# factory and first appearance so that the per-component figures of a range are one scan.
pr_costs = Table(
    "pr_costs",
    metadata,
    Column("url", String(2000), primary_key=True),
    Column("component", String(64), primary_key=True),
    Column("factory_uid", String(64), nullable=True),
    Column("first_seen_at", UTCDateTime, nullable=False),
    Column("cost_usd", Float, nullable=False),
    Index(
        "ix_pr_costs_factory_seen",
        "factory_uid",
        "first_seen_at",
        postgresql_include=["component", "cost_usd"],
    ),
)

# --- scorers ------------------------------------------------------------------------------

# A scorer of a factory's runs: for every agent of the factory, or for the agents it names.
# Benchmark-managed scorers belong to a benchmark suite and cannot be dispatched by hand.
scorers = Table(
    "scorers",
    metadata,
    Column("uid", String(64), primary_key=True),  # a UUID: dispatch requests carry UUIDs
    Column("factory_uid", String(64), ForeignKey("factories.uid"), nullable=False, index=True),
    Column("name", String(200), nullable=False),
    Column("prompt", Text, nullable=False),
    Column("scope_mode", String(16), nullable=False),  # "all_agents" | "selected_agents"
    Column("agent_uids", JSON, nullable=True),  # selected_agents: the agents it scores
    Column("active", Boolean, nullable=False),
    Column("self_improvement_enabled", Boolean, nullable=False),
    Column("benchmark_managed", Boolean, nullable=False),
    Column("version", Integer, nullable=False),
    Column("created_by_uid", String(64), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # a scorer of scorers/<definition_name>/scorer.md, and what its file says beyond the
    # columns above: the judge model, labels [{value, score, description?}], the passing score
    # and the share of runs sampled (percent)
    Column("definition_name", String(200), nullable=True),
    Column("description", Text, nullable=True),
    Column("model_id", String(200), nullable=True),
    Column("labels", JSON, nullable=True),
    Column("passing_score", Float, nullable=True),
    Column("sampling_rate", Float, nullable=True),
    Column("output", String(32), nullable=True),
)

# One request to score one run with one scorer version. Manual dispatch creates them queued; a
# runner claims them (claimed) and reports the outcome (done, failed): docs/api.md.
scoring_jobs = Table(
    "scoring_jobs",
    metadata,
    Column("job_id", String(64), primary_key=True),
    Column("scorer_uid", String(64), ForeignKey("scorers.uid"), nullable=False),
    Column("scorer_version", Integer, nullable=False),
    Column("run_id", String(64), ForeignKey("runs.run_id"), nullable=False, index=True),
    Column("factory_uid", String(64), nullable=False),
    Column("status", String(16), nullable=False),  # "queued" | "claimed" | "done" | "failed"
    # "manual" (dispatch), "sampled" (a completed run sampled by the scorer's samplingRate)
    Column("trigger", String(16), nullable=False),
    Column("requested_by_uid", String(64), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("runner_uid", String(64), nullable=True),  # the runner that claimed it, and when
    Column("claimed_at", UTCDateTime, nullable=True),
    # one queued job per (scorer, run): a second dispatch finds the first
    Index(
        "ux_scoring_jobs_queued",
        "scorer_uid",
        "run_id",
        unique=True,
        sqlite_where=text("status = 'queued'"),
        postgresql_where=text("status = 'queued'"),
    ),
)

# One reported outcome of a scoring job: a score from 0 to 1 with its reasoning, or the error.
scoring_attempts = Table(
    "scoring_attempts",
    metadata,
    Column("attempt_id", String(64), primary_key=True),  # time-ordered: the listing's tiebreak
    Column("job_id", String(64), nullable=False),
    Column("scorer_uid", String(64), nullable=False),
    Column("scorer_version", Integer, nullable=False),
    Column("run_id", String(64), nullable=False),
    Column("factory_uid", String(64), nullable=False),
    Column("status", String(16), nullable=False),  # "scored" | "failed"
    Column("score", Float, nullable=True),
    Column("reasoning", Text, nullable=True),
    Column("error", Text, nullable=True),
    Column("attempted_at", UTCDateTime, nullable=False),
    # what the scorer's labels and passing score made of the score (NULL: none, or failed)
    Column("label", String(200), nullable=True),
    Column("passed", Boolean, nullable=True),
    Index("ix_scoring_attempts_scorer", "scorer_uid", "attempted_at", "attempt_id"),
    Index("ix_scoring_attempts_run", "run_id", "scorer_uid"),
)

# --- benchmark suites (docs/api.md, "Benchmark suites") --------------------------------------

# A factory's suite of tasks, and the configurations its runs try them with (soft-deleted)
benchmark_suites = Table(
    "benchmark_suites",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("factory_uid", String(64), nullable=False, index=True),
    Column("name", String(200), nullable=False),
    Column("description", Text, nullable=True),
    Column("configurations", JSON, nullable=False),  # [{name, model_id, attempts}]
    Column("created_by_uid", String(64), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("deleted_at", UTCDateTime, nullable=True),
    # a suite of benchmarks/<definition_name>/suite.yaml, and the agent its trials run as
    # (None: the factory's foreman)
    Column("definition_name", String(200), nullable=True),
    Column("agent_uid", String(64), nullable=True),
)

benchmark_tasks = Table(
    "benchmark_tasks",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("suite_uid", String(64), nullable=False),
    Column("title", String(200), nullable=False),
    Column("prompt", Text, nullable=False),
    Column("success_criteria", Text, nullable=False),
    Column("source_run_id", String(64), nullable=True),
    Column("starting_repo_refs", JSON, nullable=True),
    Column("tags", JSON, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # a task of tasks/<slug>.yaml, at `position` in its suite's `tasks` list
    Column("slug", String(200), nullable=True),
    Column("position", Integer, nullable=True),
    UniqueConstraint("suite_uid", "title", name="ux_benchmark_tasks_title"),
)

# One launch of a suite: its configurations as they were, one trial per task x configuration x
# attempt; cancelled_at once cancelled
benchmark_runs = Table(
    "benchmark_runs",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("suite_uid", String(64), nullable=False, index=True),
    Column("factory_uid", String(64), nullable=False),
    Column("configurations", JSON, nullable=False),
    Column("created_by_uid", String(64), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("cancelled_at", UTCDateTime, nullable=True),
)

benchmark_trials = Table(
    "benchmark_trials",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("benchmark_run_uid", String(64), nullable=False, index=True),
    Column("task_uid", String(64), nullable=False),
    Column("task_title", String(200), nullable=False),
    Column("configuration", String(100), nullable=False),
    Column("attempt_number", Integer, nullable=False),
    Column("agent_run_id", String(64), nullable=False, index=True),
    Column("created_at", UTCDateTime, nullable=False),
)

# --- factory inbox ---------------------------------------------------------------------------

# Something a factory's team should look at (docs/inbox.md): a run that failed or needs input, a
# task that changed stage, a dispatch that could not start. Active until `resolved_at`.
inbox_notifications = Table(
    "inbox_notifications",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("factory_uid", String(64), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("title", String(500), nullable=False),
    Column("detail", Text, nullable=True),
    Column("run_id", String(64), nullable=True, index=True),
    Column("task_uid", String(64), nullable=True, index=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("resolved_at", UTCDateTime, nullable=True),
    Index("ix_inbox_notifications_factory_created", "factory_uid", "created_at"),
)

# Who a notification is for (the factory team's members when it was made), with their own
# read state.
inbox_recipients = Table(
    "inbox_recipients",
    metadata,
    Column("notification_uid", String(64), ForeignKey("inbox_notifications.uid"), primary_key=True),
    Column("user_uid", String(64), primary_key=True),
    Column("read_at", UTCDateTime, nullable=True),
    Index("ix_inbox_recipients_user", "user_uid"),
)

# --- scheduled agents ------------------------------------------------------------------------

# A cron schedule that starts an agent run at each slot (docs/schedules.md). `next_run_at` is the
# slot due next (None while paused): a scheduler claims it with a conditional UPDATE, so a slot
# starts one run however many workers look at it.
scheduled_agents = Table(
    "scheduled_agents",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("team_uid", String(64), nullable=False, index=True),
    Column("owner_kind", String(8), nullable=False),  # "team" | "user"
    Column("name", String(200), nullable=False),
    Column("cron_schedule", String(200), nullable=False),
    Column("prompt", Text, nullable=True),
    Column("agent_config", JSON, nullable=True),
    Column("agent_uid", String(64), nullable=True),
    Column("metadata", JSON, nullable=True),
    Column("mode", String(16), nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("created_by_kind", String(16), nullable=False),
    Column("created_by_uid", String(64), nullable=False),
    Column("updated_by_kind", String(16), nullable=False),
    Column("updated_by_uid", String(64), nullable=False),
    Column("next_run_at", UTCDateTime, nullable=True, index=True),
    Column("last_ran_at", UTCDateTime, nullable=True),
    Column("last_run_id", String(64), nullable=True),
    Column("last_spawn_error", String(2000), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

# --- factory definition files (docs/factory-files.md) -----------------------------------------

# A runner configuration a factory's runners/<name>.yaml declares: the sandbox its agents' runs
# are prepared in. Not a self-hosted worker (`runners` above): workers execute runs, a runner
# configuration says what they run in. JSON columns hold factory_format's comparable forms.
factory_runners = Table(
    "factory_runners",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("factory_uid", String(64), ForeignKey("factories.uid"), nullable=False, index=True),
    Column("name", String(200), nullable=False),
    Column("description", Text, nullable=True),
    Column("setup_commands", JSON, nullable=False),  # [command]
    Column("instance_shape", JSON, nullable=True),  # {vcpus, memory_gb}; None: the default
    Column("platform", JSON, nullable=False),  # {os, arch, docker_image?, ...}
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("factory_uid", "name", name="ux_factory_runners_name"),
)

# A skill of a factory: skills/<name>/SKILL.md (every agent, agent_uid None) or
# agents/<agent>/skills/<name>/SKILL.md (that agent). `name` is the directory path under
# skills/, `frontmatter` the keys of SKILL.md other than name and description, as written.
factory_skills = Table(
    "factory_skills",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("factory_uid", String(64), ForeignKey("factories.uid"), nullable=False, index=True),
    Column("agent_uid", String(64), nullable=True),
    Column("name", String(1000), nullable=False),
    Column("title", String(1000), nullable=False),
    Column("description", Text, nullable=True),
    Column("frontmatter", JSON, nullable=True),
    Column("playbook", Text, nullable=False),
    # the other text files of its directory, by path under it (NULL: none); plans compare them
    Column("files", JSON, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

# --- outbound messages (gateway/foundation/outbound)
# ----------------------------------------------------

# What the gateway sends to other services (a reply to a provider, an event to a subscriber),
# written in the transaction of the change it reports and sent by the dispatcher with retries.
# `key` makes an enqueue idempotent; `subject` names what the message is about (a run id) for
# whoever shows it; `destination` groups what shares the other side's limits. `next_attempt_at`
# None: held until released (a reply's edit waits for the post it edits); `claimed_until`: the
# lease of the dispatcher sending it now.
outbound_messages = Table(
    "outbound_messages",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("key", String(300), nullable=False, unique=True),
    Column("subject", String(64), nullable=True, index=True),
    Column("destination", String(300), nullable=False),
    Column("payload", JSON, nullable=False),
    Column("state", String(16), nullable=False),  # pending | delivered | failed
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UTCDateTime, nullable=True),
    Column("claimed_until", UTCDateTime, nullable=True),
    Column("last_error", String(1000), nullable=True),
    Column("last_status", Integer, nullable=True),
    Column("result", JSON, nullable=True),  # Delivered: {message_id, url}
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Index("ix_outbound_messages_due", "state", "next_attempt_at"),
)

# Every attempt at sending a message: when, what came back, how long it took.
outbound_attempts = Table(
    "outbound_attempts",
    metadata,
    Column("message_id", String(64), primary_key=True),
    Column("n", Integer, primary_key=True),
    Column("at", UTCDateTime, nullable=False),
    Column("status", Integer, nullable=True),
    Column("latency_ms", Integer, nullable=False),
    Column("response_excerpt", String(1024), nullable=True),
    Column("error", String(1000), nullable=True),
)

# --- events (docs/events.md) ----------------------------------------------------------------

# The event log: what happened (a run created or changing state, a delivery refused, ...),
# written in the transaction of the change it tells. `seq` orders it for the live stream's
# `id:`/Last-Event-ID (AUTOINCREMENT on SQLite: a number is never handed out twice).
events = Table(
    "events",
    metadata,
    Column("seq", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True),
    Column("team_uid", String(64), nullable=True),
    Column("factory_uid", String(64), nullable=True),
    Column("type", String(64), nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Column("data", JSON, nullable=False),
    Index("ix_events_team_seq", "team_uid", "seq"),
    sqlite_autoincrement=True,
)

# A team's subscription to events, delivered signed (Standard Webhooks) to `url`. `events`:
# exact types and `prefix.*` patterns. A rotated secret keeps signing beside the new one until
# `previous_secret_until`.
event_subscriptions = Table(
    "event_subscriptions",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("team_uid", String(64), ForeignKey("teams.uid"), nullable=False, index=True),
    Column("factory_uid", String(64), nullable=True),
    Column("url", String(2000), nullable=False),
    Column("events", JSON, nullable=False),
    Column("description", String(500), nullable=True),
    Column("secret_encrypted", Text, nullable=False),
    Column("previous_secret_encrypted", Text, nullable=True),
    Column("previous_secret_until", UTCDateTime, nullable=True),
    Column("enabled", Boolean, nullable=False),
    # why it was disabled by the service (410 Gone, failing too long); NULL when by a user
    Column("disabled_reason", String(500), nullable=True),
    # the first failure of the current run of failures; NULL after a delivery
    Column("failing_since", UTCDateTime, nullable=True),
    Column("created_by", String(64), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("deleted_at", UTCDateTime, nullable=True),
)

# A smee-compatible channel (docs/events.md#smee-compatible-channels): a capability URL that
# streams one webhook's or connection's accepted deliveries to whoever holds it (smee-client
# sends no Authorization header). The token is kept as its SHA-256; deleting the row revokes it.
delivery_channels = Table(
    "delivery_channels",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("source_uid", String(64), nullable=False, index=True),
    Column("team_uid", String(64), ForeignKey("teams.uid"), nullable=False),
    Column("token_hash", String(64), nullable=False),
    Column("description", String(500), nullable=True),
    Column("created_by", String(64), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ux_delivery_channels_token", "token_hash", unique=True),
)
