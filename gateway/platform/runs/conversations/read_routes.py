"""Reads of what runs said (spec 4.9): a run's and a conversation's normalized messages, a
conversation's transcript, the run an external reference belongs to, the team's skills.
docs/api.md, "Conversations"."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Query, Routes
from gateway.kernel.errors import NotFound
from gateway.platform.runs.conversations import reads as conversation_reads
from gateway.platform.runs.conversations.models import Conversation, Reference, RunConversation
from gateway.platform.runs.outputs.artifacts import transcript_uid
from gateway.platform.runs.outputs.routes import signed_url
from gateway.platform.runs.record.items import run_item
from gateway.platform.runs.record.models import RunItem
from gateway.platform.runs.record.store import RUN_ERRORS
from gateway.platform.runs.skills.models import Skills
from gateway.platform.runs.skills.offered import team_skills

routes = Routes("runs")


@routes.get(
    "/agent/runs/{run_id}/conversation",
    "A run's conversation, normalized",
    response=RunConversation,
    errors=RUN_ERRORS,
)
async def run_conversation_endpoint(request: Request) -> RunConversation:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        run_id = request.path_params["run_id"]
        return await conversation_reads.run_conversation(conn, principal, run_id)


@routes.get(
    "/agent/conversations/{conversation_id}",
    "A conversation, normalized",
    response=Conversation,
    errors=RUN_ERRORS,
    notes="The messages of its runs you can see, oldest run first.",
)
async def conversation_endpoint(request: Request) -> Conversation:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        conversation_id = request.path_params["conversation_id"]
        return await conversation_reads.conversation(conn, principal, conversation_id)


@routes.get(
    "/agent/conversations/{conversation_id}/transcript",
    "A conversation's transcript",
    ok=302,
    errors=RUN_ERRORS,
    notes="Redirects to a signed URL (5 minutes) of the transcript of its newest run that has "
    "one; 404 when none has.",
)
async def conversation_transcript_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    conversation_id = request.path_params["conversation_id"]
    async with services_of(request).database.read() as conn:
        runs = await conversation_reads.conversation_runs(conn, principal, conversation_id)
        for run in reversed(runs):
            uid = await transcript_uid(conn, run.run_id)
            if uid is not None:
                return RedirectResponse(signed_url(request, uid)[0], 302)
    raise NotFound(f"conversation_id: {conversation_id} has no transcript (yet)")


@routes.get(
    "/agent/run-by-reference",
    "The run an external reference belongs to",
    response=RunItem,
    errors=RUN_ERRORS,
    notes="The newest run you can see whose ticket is `url`, or that produced the pull "
    "request at `url`; 404 when none.",
)
async def run_by_reference_endpoint(request: Request, query: Query[Reference]) -> RunItem:
    principal = await principal_of(request)
    url = query.read().url
    async with services_of(request).database.read() as conn:
        run = await conversation_reads.run_by_reference(conn, principal, url)
        return await run_item(conn, run)


@routes.get(
    "/agent/skills",
    "Skills the agents of your teams offer",
    response=Skills,
    errors=(401,),
)
async def skills_endpoint(request: Request) -> Skills:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        return Skills(await team_skills(conn, principal))
