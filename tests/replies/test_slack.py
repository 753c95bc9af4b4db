"""Slack replies against a stand-in of Slack's Web API (slack_api.py), with slack_sdk's own
client as the oracle that the stand-in answers as Slack does and that the gateway asks as
slack_sdk asks."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from gateway.webhook_gateway.replies import (
    Credentials,
    Delivered,
    Failed,
    InstallationTokens,
    RetryLater,
    SlackThread,
    client_for,
)
from tests.replies.checks import check_a_deleted_message_is_posted_anew
from tests.replies.slack_api import SlackApi

BOT = "xoxb-1-valid"
THREAD = SlackThread(channel="C0123ABCD", thread_ts="1699999999.000100")


@pytest.fixture
def slack() -> SlackApi:
    api = SlackApi(channels={THREAD.channel}, tokens={BOT})
    with api.serve():
        yield api


def client(http: httpx.AsyncClient, api: SlackApi, token: str = BOT):
    return client_for(
        "slack", http, Credentials(bot_token=token), api.url + "/api", InstallationTokens()
    )


@pytest.mark.service
def test_the_stand_in_answers_as_slack_does_to_slack_sdk(slack: SlackApi) -> None:
    sdk = WebClient(token=BOT, base_url=slack.url + "/api/")
    posted = sdk.chat_postMessage(channel=THREAD.channel, text="hi", thread_ts=THREAD.thread_ts)
    assert posted["ok"] is True and posted["message"]["thread_ts"] == THREAD.thread_ts
    updated = sdk.chat_update(channel=THREAD.channel, ts=posted["ts"], text="bye")
    assert updated["text"] == "bye"
    link = sdk.chat_getPermalink(channel=THREAD.channel, message_ts=posted["ts"])
    assert link["permalink"].startswith("https://acme.slack.com/archives/")
    with pytest.raises(SlackApiError) as refused:
        sdk.chat_postMessage(channel="C0GONE", text="hi")
    assert refused.value.response["error"] == "channel_not_found"


async def test_the_gateway_asks_as_slack_sdk_does(http: httpx.AsyncClient, slack: SlackApi) -> None:
    sdk = WebClient(token=BOT, base_url=slack.url + "/api/")
    await asyncio.to_thread(
        sdk.chat_postMessage,
        channel=THREAD.channel,
        text="from the sdk",
        thread_ts=THREAD.thread_ts,
    )
    made = await client(http, slack).create(THREAD, "from the gateway")
    assert isinstance(made, Delivered)
    by_sdk, by_gateway = slack.calls_to(r"/api/chat\.postMessage")
    assert set(by_gateway.body) == set(by_sdk.body) == {"channel", "text", "thread_ts"}
    assert by_gateway.headers["authorization"] == by_sdk.headers["authorization"] == f"Bearer {BOT}"
    assert by_gateway.headers["content-type"].startswith("application/json")


async def test_an_acknowledgement_in_the_thread_then_edited(
    http: httpx.AsyncClient, slack: SlackApi
) -> None:
    replies = client(http, slack)
    made = await replies.create(THREAD, "on it")
    assert isinstance(made, Delivered)
    assert (
        made.url
        == f"https://acme.slack.com/archives/{THREAD.channel}/p{made.message_id.replace('.', '')}"
    )
    assert slack.messages[(THREAD.channel, made.message_id)]["thread_ts"] == THREAD.thread_ts
    edited = await replies.update(THREAD, made.message_id, "done")
    assert edited == made
    assert slack.messages[(THREAD.channel, made.message_id)]["text"] == "done"
    update = slack.calls_to(r"/api/chat\.update")[0]
    assert update.body == {"channel": THREAD.channel, "ts": made.message_id, "text": "done"}


async def test_ok_false_is_an_error_and_its_code_decides(
    http: httpx.AsyncClient, slack: SlackApi
) -> None:
    replies = client(http, slack)
    gone = await replies.create(SlackThread(channel="C0GONE", thread_ts="1.2"), "x")
    assert gone == Failed(error="chat.postMessage: channel_not_found", gone=True, status=200)
    revoked = await client(http, slack, "xoxb-revoked").create(THREAD, "x")
    assert revoked == Failed(error="chat.postMessage: invalid_auth", status=200)
    slack.answer_next(200, {"ok": False, "error": "ratelimited"}, {"Retry-After": "3"})
    assert await replies.create(THREAD, "x") == RetryLater(
        error="chat.postMessage: ratelimited", after=3.0
    )
    slack.answer_next(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "30"})
    limited = await replies.create(THREAD, "x")
    assert isinstance(limited, RetryLater) and limited.after == 30.0
    slack.answer_next(503, "upstream")
    assert isinstance(await replies.create(THREAD, "x"), RetryLater)
    assert slack.messages == {}


async def test_a_deleted_acknowledgement_is_replaced(
    http: httpx.AsyncClient, slack: SlackApi
) -> None:
    await check_a_deleted_message_is_posted_anew(client(http, slack), THREAD, slack.messages.clear)


async def test_a_missing_permalink_loses_nothing(http: httpx.AsyncClient, slack: SlackApi) -> None:
    slack.routes = [route for route in SlackApi.routes if "getPermalink" not in route[1]]
    made = await client(http, slack).create(THREAD, "on it")
    assert isinstance(made, Delivered) and made.url is None
