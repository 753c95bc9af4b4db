"""The payload a webhook run comes with is one of its artifacts like any other: listed in the
official client's ArtifactItem shape (FILE), and found, with a download link, at
GET /agent/artifacts/{artifact_uid} (SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
from oz_agent_sdk.types.agent.artifact_item import FileArtifact
from oz_agent_sdk.types.agent_get_artifact_response import FileArtifactResponse
from sqlalchemy import update

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from tests.platform.runs.official_client import ThroughTestClient, official_client
from tests.support import World, eventually

PAYLOAD = {"action": "opened", "n": 7}


def _webhook_run(world: World) -> dict[str, Any]:
    base = f"/factory/{world.factory_uid}"
    hook = world.api("POST", f"{base}/webhooks", json={"name": "h"}).json()
    trigger = {"provider": "webhook", "event": "received", "filter": {"webhook_ids": [hook["uid"]]}}
    made = world.api("POST", f"{base}/automations", json={"name": "a", "prompt": "p",
                                                          "triggers": [trigger]})  # fmt: skip
    assert made.status_code == 201, made.text
    sent = world.client.post(
        f"/webhooks/w/{hook['uid']}",
        content=orjson.dumps(PAYLOAD),
        headers={"Authorization": f"Bearer {hook['secret']}"},
    )
    assert sent.status_code == 202, sent.text
    delivery = f"{base}/webhooks/{hook['uid']}/deliveries/{sent.json()['delivery_id']}"
    runs = eventually(lambda: world.api("GET", delivery).json().get("runs"))
    run: dict[str, Any] = world.api("GET", f"/agent/runs/{runs[0]['run_id']}").json()
    return run


def test_the_payload_is_a_file_artifact_in_the_official_shape(world: World) -> None:
    run = _webhook_run(world)
    (item,) = run["artifacts"]
    size = len(orjson.dumps(PAYLOAD))
    assert item["artifact_type"] == "FILE" and "type" not in item
    assert item["data"] == {
        "artifact_uid": item["data"]["artifact_uid"],
        "filename": "event-payload.json",
        "filepath": "event-payload.json",
        "mime_type": "application/json",
        "size_bytes": size,
    }
    assert item["data"]["artifact_uid"].startswith("att_")
    official = official_client(world).agent.runs.retrieve(run["run_id"])
    assert official.artifacts is not None
    (parsed,) = official.artifacts
    assert isinstance(parsed, FileArtifact) and parsed.data.filename == "event-payload.json"


def test_the_payload_artifact_is_found_and_downloads_the_payload(world: World) -> None:
    run = _webhook_run(world)
    uid = run["artifacts"][0]["data"]["artifact_uid"]
    answer = world.api("GET", f"/agent/artifacts/{uid}")
    assert answer.status_code == 200, answer.text
    details = answer.json()
    assert details["artifact_type"] == "FILE" and details["artifact_uid"] == uid
    assert details["run_id"] == run["run_id"]
    assert details["data"]["filename"] == "event-payload.json"
    assert details["data"]["content_type"] == "application/json"
    downloaded = world.client.get(details["data"]["download_url"])
    assert downloaded.status_code == 200 and orjson.loads(downloaded.content) == PAYLOAD
    redirect = world.api("GET", f"/agent/artifacts/{uid}/download", follow_redirects=False)
    assert redirect.status_code == 302
    official = official_client(world).agent.get_artifact(uid)
    assert isinstance(official, FileArtifactResponse) and official.artifact_uid == uid
    through = httpx.Client(transport=ThroughTestClient(world))
    assert orjson.loads(through.get(official.data.download_url).content) == PAYLOAD
    # another team sees nothing; an unknown attachment is unknown
    hidden = world.api("GET", f"/agent/artifacts/{uid}", headers=world.stranger)
    assert hidden.status_code == 404
    assert world.api("GET", "/agent/artifacts/att_nosuch").status_code == 404


def test_runs_stored_with_the_earlier_attachment_shape_are_shown_in_the_official_one(
    world: World,
) -> None:
    run = _webhook_run(world)
    item = run["artifacts"][0]
    earlier = {
        "type": "attachment",
        "name": "event-payload.json",
        "content_type": "application/json",
        "size": item["data"]["size_bytes"],
        "attachment_id": item["data"]["artifact_uid"],
    }

    async def rewrite(services: Services) -> None:
        async with services.database.transaction() as conn:
            runs = t.runs
            await conn.execute(
                update(runs).where(runs.c.run_id == run["run_id"]).values(artifacts=[earlier])
            )

    world.client.run(rewrite)
    again = world.api("GET", f"/agent/runs/{run['run_id']}").json()
    assert again["artifacts"] == [item | {"created_at": again["artifacts"][0]["created_at"]}]
    assert again["artifacts"][0]["created_at"].startswith(run["created_at"][:19])
