"""Alembic environment: runs on a connection handed in by gateway.foundation.store.migrate."""

from __future__ import annotations

from alembic import context

from gateway.foundation.store.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "run migrations through `gateway.foundation.store.migrate`, which supplies a connection"
    )

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
