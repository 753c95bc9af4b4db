"""Start-up migration: a store already at the newest revision is left alone, without Alembic."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from alembic.script import ScriptDirectory

from gateway.foundation.store import create_database, migrate
from gateway.foundation.store.migrate import HEAD_REVISION, alembic_config, stored_revision
from tests.conftest import make_settings


def test_head_revision_is_alembics_own_head() -> None:
    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == HEAD_REVISION


def _revision_after_migrate(url: str) -> tuple[str | None, str | None]:
    async def run() -> tuple[str | None, str | None]:
        database = create_database(url)
        try:
            before = await stored_revision(database)
            await migrate(database)
            return before, await stored_revision(database)
        finally:
            await database.close()

    return asyncio.run(run())


@pytest.mark.slow  # starts processes of its own
def test_a_store_at_head_is_not_migrated_again(fresh_store: str) -> None:
    url = make_settings(fresh_store).database_url
    assert _revision_after_migrate(url) == (None, HEAD_REVISION)  # migrated from nothing
    # a fresh process migrating the same store again never imports Alembic
    code = (
        "import asyncio, sys\n"
        "from gateway.foundation.store import create_database, migrate\n"
        "async def main():\n"
        f"    database = create_database({url!r})\n"
        "    await migrate(database)\n"
        "    await database.close()\n"
        "asyncio.run(main())\n"
        "print('alembic' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "False", done.stderr
