"""The attachments a runner is handed with the runs it claims and the follow-ups it receives:
each with a signed download URL on this gateway (runs/attachments)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.platform.runners.models import ClaimedRun, RunMessage
from gateway.platform.runs.attachments import files as attachments
from gateway.platform.runs.attachments.signed_urls import AttachmentLinks


async def with_files(
    conn: AsyncConnection, runs: Sequence[ClaimedRun], links: AttachmentLinks
) -> None:
    """Fills each claimed run's `attachments` and its messages' `files`."""
    found = await attachments.run_files(conn, [run.run_id for run in runs], links)
    for run in runs:
        run.attachments = found.get(run.run_id, [])
        by_id = {file.attachment_id: file for file in run.attachments}
        for message in run.messages:
            message.files = [by_id[i] for i in message.attachments if i in by_id]


async def message_files(
    conn: AsyncConnection, messages: Sequence[RunMessage], links: AttachmentLinks
) -> None:
    """Fills the `files` of follow-ups handed over one by one (heartbeats)."""
    named = [i for message in messages for i in message.attachments]
    by_id = await attachments.files_by_id(conn, named, links)
    for message in messages:
        message.files = [by_id[i] for i in message.attachments if i in by_id]
