"""A subscription's messages: /event-subscriptions/{uid}/messages[/{message_id}[/attempts |
/retry]] and /event-subscriptions/{uid}/retry-failed."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Body, Query, Routes
from gateway.foundation.subscriptions import management, messages
from gateway.foundation.subscriptions.messages import (
    EventMessage,
    EventMessageList,
    MessageAttemptList,
    MessagesQuery,
    Retried,
    RetryFailed,
)

routes = Routes("event subscriptions")
ONE = "/event-subscriptions/{subscription_uid}"
MESSAGE = ONE + "/messages/{message_id}"


@routes.get(
    ONE + "/messages",
    "List a subscription's messages, newest first",
    team=True,
    response=EventMessageList,
)
async def list_messages(request: Request, query: Query[MessagesQuery]) -> EventMessageList:
    principal = await principal_of(request, team_scoped=True)
    wanted = query.read()
    async with services_of(request).database.read() as conn:
        row = await management.visible_row(conn, principal, request.path_params["subscription_uid"])
        return EventMessageList(messages=await messages.list_messages(conn, row.uid, wanted))


@routes.get(MESSAGE, "Get a message", team=True, response=EventMessage)
async def get_message(request: Request) -> EventMessage:
    principal = await principal_of(request, team_scoped=True)
    async with services_of(request).database.read() as conn:
        row = await management.visible_row(conn, principal, request.path_params["subscription_uid"])
        found = await messages.get_message(conn, row.uid, request.path_params["message_id"])
        return EventMessage.from_row(found)


@routes.get(
    MESSAGE + "/attempts",
    "List a message's attempts, first first",
    team=True,
    response=MessageAttemptList,
)
async def list_attempts(request: Request) -> MessageAttemptList:
    principal = await principal_of(request, team_scoped=True)
    async with services_of(request).database.read() as conn:
        row = await management.visible_row(conn, principal, request.path_params["subscription_uid"])
        found = await messages.get_message(conn, row.uid, request.path_params["message_id"])
        return MessageAttemptList(attempts=await messages.attempts(conn, found.id))


@routes.post(
    MESSAGE + "/retry",
    "Send a message again now",
    team=True,
    response=EventMessage,
    body_required=False,
    errors=(401, 403, 404),
    notes="Whatever its state: a failed message, or a delivered one the subscriber lost. "
    "Same `webhook-id`.",
)
async def retry(request: Request) -> EventMessage:
    principal = await principal_of(request, team_scoped=True)
    management.require_user(principal)
    async with services_of(request).database.transaction() as conn:
        row = await management.visible_row(conn, principal, request.path_params["subscription_uid"])
        return await messages.retry(conn, row.uid, request.path_params["message_id"])


@routes.post(
    ONE + "/retry-failed",
    "Send again every failed message created since a time",
    team=True,
    response=Retried,
    errors=(400, 401, 403, 404, 413),
)
async def retry_failed(request: Request, body: Body[RetryFailed]) -> Retried:
    principal = await principal_of(request, team_scoped=True)
    management.require_user(principal)
    since = (await body.read()).since
    async with services_of(request).database.transaction() as conn:
        row = await management.visible_row(conn, principal, request.path_params["subscription_uid"])
        return Retried(retried=await messages.retry_failed(conn, row.uid, since))
