"""Reads of what runs said (spec 4.9): a run's and a conversation's normalized messages, a
conversation's transcript, the run an external reference belongs to, the team's skills.
docs/api.md, "Conversations"."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gateway.api.auth import principal_of, services_of
from gateway.api.fields import Timestamp
from gateway.api.http import json_response
from gateway.api.routing import Query, Routes
from gateway.errors import NotFound
from gateway.platform.runners import execution as run_execution
from gateway.platform.runs import conversation_reads
from gateway.platform.runs.output_routes import signed_url
from gateway.platform.runs.records import one_run_json, visible_run
from gateway.platform.runs.routes import Run

routes = Routes("runs")
RUN_ERRORS = (400, 401, 404)  # a run the caller cannot see is a 404, never a 403


class Message(Struct, kw_only=True):
    id: str
    run_id: str
    role: Literal["user", "agent", "tool", "system"]
    kind: Annotated[
        Literal["prompt", "follow_up", "message"],
        Meta(description="the run's prompt, a user's follow-up, or what the runner reported"),
    ]
    text: str
    mode: str | None
    routing: Annotated[str | None, Meta(description="follow-ups: queued, resumed, injected")]
    attachments: list[str]
    created_at: Timestamp


class RunConversation(Struct, kw_only=True):
    run_id: str
    conversation_id: str
    messages: list[Message]


class Conversation(Struct, kw_only=True):
    conversation_id: str
    run_ids: Annotated[list[str], Meta(description="its runs you can see, oldest first")]
    messages: list[Message]


class Reference(Struct, kw_only=True, forbid_unknown_fields=True):
    url: Annotated[str, Meta(min_length=1, max_length=2000, description="a ticket or PR URL")]


class Skill(Struct, kw_only=True):
    skill_spec: str
    name: str
    repository: str
    agent_uids: Annotated[list[str], Meta(description="the agents that offer it")]


class Skills(Struct):
    skills: list[Skill]


@routes.get(
    "/agent/runs/{run_id}/conversation",
    "A run's conversation, normalized",
    response=RunConversation,
    errors=RUN_ERRORS,
)
async def run_conversation_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        run = await visible_run(conn, principal, request.path_params["run_id"])
        messages = await conversation_reads.run_messages(conn, [run])
    body = {"run_id": run.run_id, "conversation_id": run.conversation_id, "messages": messages}
    return json_response(body)


@routes.get(
    "/agent/conversations/{conversation_id}",
    "A conversation, normalized",
    response=Conversation,
    errors=RUN_ERRORS,
    notes="The messages of its runs you can see, oldest run first.",
)
async def conversation_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    conversation_id = request.path_params["conversation_id"]
    async with services_of(request).database.read() as conn:
        runs = await conversation_reads.conversation_runs(conn, principal, conversation_id)
        messages = await conversation_reads.run_messages(conn, runs)
    body = {
        "conversation_id": conversation_id,
        "run_ids": [run.run_id for run in runs],
        "messages": messages,
    }
    return json_response(body)


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
            row = await run_execution.transcript_of(conn, run.run_id)
            if row is not None:
                return RedirectResponse(signed_url(request, row.artifact_uid)[0], 302)
    raise NotFound(f"conversation_id: {conversation_id} has no transcript (yet)")


@routes.get(
    "/agent/run-by-reference",
    "The run an external reference belongs to",
    response=Run,
    errors=RUN_ERRORS,
    notes="The newest run you can see whose ticket is `url`, or that produced the pull "
    "request at `url`; 404 when none.",
)
async def run_by_reference_endpoint(request: Request, query: Query[Reference]) -> Response:
    principal = await principal_of(request)
    url = query.read().url
    async with services_of(request).database.read() as conn:
        run = await conversation_reads.run_by_reference(conn, principal, url)
        return json_response(await one_run_json(conn, run))


@routes.get(
    "/agent/skills",
    "Skills the agents of your teams offer",
    response=Skills,
    errors=(401,),
)
async def skills_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        skills = await conversation_reads.team_skills(conn, principal)
    return json_response({"skills": skills})
