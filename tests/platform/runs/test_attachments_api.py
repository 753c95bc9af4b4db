"""Attachments with content (SQLite and PostgreSQL): prepare answers a signed upload URL on the
gateway, the upload is checked (content type, size, once), a follow-up names only uploaded ones,
and the runner of the run gets a download URL for each."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gateway.kernel.security import SecretBox
from gateway.platform.runs.attachments.models import UploadGrant
from gateway.platform.runs.attachments.signed_urls import AttachmentLinks
from tests.conftest import make_settings
from tests.platform.runners.test_runner_api import Runner
from tests.platform.runs.runs_support import new_run, upload
from tests.support import GatewayClient, World, eventually

TRACE = b"Traceback (most recent call last):\n  boom\n"


def _prepare(world: World, run_id: str, *files: dict[str, Any]) -> list[dict[str, Any]]:
    answer = world.api(
        "POST", f"/agent/runs/{run_id}/attachments/prepare", json={"files": list(files)}
    )
    assert answer.status_code == 200, answer.text
    prepared: list[dict[str, Any]] = answer.json()["attachments"]
    return prepared


def _put(world: World, prepared: dict[str, Any], content: bytes, content_type: str) -> Any:
    return world.client.put(
        prepared["upload"]["url"], content=content, headers={"Content-Type": content_type}
    )


def _download(world: World, url: str) -> Any:
    answer = world.client.get(url)  # no credentials: the signed URL is one
    assert answer.status_code == 200, answer.text
    return answer


def test_an_uploaded_attachment_reaches_the_runner_of_its_run(world: World) -> None:
    run = new_run(world)
    spec = {"name": "trace.log", "content_type": "text/plain", "size": len(TRACE)}
    prepared = _prepare(world, run["run_id"], spec)[0]
    target = prepared["upload"]
    assert target["method"] == "PUT" and target["headers"] == {"Content-Type": "text/plain"}
    assert target["url"].startswith("http://testserver/api/v1/agent/attachments/upload/")
    assert target["max_bytes"] == len(TRACE) and target["expires_at"].endswith("Z")

    followup = f"/agent/runs/{run['run_id']}/followups"
    named = {"message": "See the trace.", "attachments": [prepared["attachment_id"]]}
    early = world.api("POST", followup, json=named)
    assert early.status_code == 422 and early.json()["code"] == "attachment_not_uploaded"

    stored = upload(world, prepared, TRACE)
    assert stored == {
        "attachment_id": prepared["attachment_id"],
        "name": "trace.log",
        "content_type": "text/plain",
        "size": len(TRACE),
        "sha256": stored["sha256"],
    }
    assert len(stored["sha256"]) == 64
    assert world.api("POST", followup, json=named).json()["routing"] == "queued"

    claimed = Runner(world).claim()[0]
    message = claimed["messages"][0]
    assert message["attachments"] == [prepared["attachment_id"]]
    [file] = message["files"]
    assert claimed["attachments"] == [file]
    assert (file["attachment_id"], file["name"], file["content_type"], file["size"]) == (
        prepared["attachment_id"],
        "trace.log",
        "text/plain",
        len(TRACE),
    )
    got = _download(world, file["download_url"])
    assert got.content == TRACE and got.headers["content-type"].startswith("text/plain")
    assert got.headers["content-disposition"] == 'attachment; filename="trace.log"'
    assert got.headers["x-content-type-options"] == "nosniff"


def test_a_file_sent_into_a_live_session_comes_with_its_heartbeat(world: World) -> None:
    run = new_run(world)
    runner = Runner(world)
    runner.claim()
    runner.on(run["run_id"], "progress", state="INPROGRESS")
    prepared = _prepare(world, run["run_id"], {"name": "shot.png", "content_type": "image/png"})[0]
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
    upload(world, prepared, png)
    body = {"message": "Look at this.", "attachments": [prepared["attachment_id"]]}
    sent = world.api("POST", f"/agent/runs/{run['run_id']}/followups", json=body)
    assert sent.json()["routing"] == "injected"
    [message] = runner.on(run["run_id"], "heartbeat")["messages"]
    [file] = message["files"]
    assert file["content_type"] == "image/png"
    assert _download(world, file["download_url"]).content == png


def test_uploads_are_checked(world: World) -> None:
    run = new_run(world)
    sized, typed = _prepare(
        world,
        run["run_id"],
        {"name": "a.json", "content_type": "application/json", "size": 2},
        {"name": "b.txt", "content_type": "text/plain"},
    )
    wrong_type = _put(world, sized, b"{}", "text/html")
    assert wrong_type.status_code == 415
    assert wrong_type.json()["code"] == "unsupported_media_type"
    assert _put(world, sized, b"{}", "").status_code == 415
    too_big = _put(world, sized, b'{"a": 1}', "application/json")  # 8 bytes, 2 prepared
    assert too_big.status_code == 413 and too_big.json()["code"] == "payload_too_large"
    assert _put(world, sized, b"{}", "application/json; charset=utf-8").status_code == 200
    again = _put(world, sized, b"{}", "application/json")
    assert again.status_code == 409 and again.json()["code"] == "attachment_uploaded"
    short = _prepare(world, run["run_id"], {"content_type": "text/plain", "size": 5})[0]
    wrong_size = _put(world, short, b"abc", "text/plain")
    assert wrong_size.status_code == 400 and wrong_size.json()["detail"].startswith("body")
    forged = typed["upload"]["url"][:-4] + "AAAA"
    assert (
        world.client.put(forged, content=b"x", headers={"Content-Type": "text/plain"}).json()[
            "code"
        ]
        == "not_found"
    )
    # a download URL is no upload URL, and the reverse
    token = typed["upload"]["url"].rsplit("/", 1)[1]
    assert world.client.get(f"/api/v1/agent/attachments/content/{token}").status_code == 404


def test_prepare_refuses_what_could_not_be_uploaded(world: World) -> None:
    run = new_run(world)
    at = f"/agent/runs/{run['run_id']}/attachments/prepare"
    for bad, field in (
        ({"content_type": "application/x-msdownload"}, "files[0].content_type"),
        ({"content_type": "not a type"}, "files[0].content_type"),
        ({"size": 10 * 1024 * 1024 + 1}, "files[0].size"),
        ({"size": -1}, "files[0].size"),
    ):
        answer = world.api("POST", at, json={"files": [bad]})
        assert answer.status_code == 400, bad
        assert answer.json()["detail"].startswith(field), answer.json()


def test_upload_and_download_links_expire_and_name_their_purpose() -> None:
    links = AttachmentLinks(SecretBox(b"k" * 32), "https://gw.example.test")
    past = datetime.now(UTC) - timedelta(seconds=1)
    grant = UploadGrant(
        attachment_id="att_1", content_type="text/plain", max_bytes=9, size=None, expires_at=past
    )
    token = links.upload(grant).url.rsplit("/", 1)[1]
    assert links.read_upload(token) is None
    fresh = grant.__class__(
        attachment_id="att_1",
        content_type="text/plain",
        max_bytes=9,
        size=3,
        expires_at=datetime.now(UTC) + timedelta(minutes=1),
    )
    read = links.read_upload(links.upload(fresh).url.rsplit("/", 1)[1])
    assert read is not None and (read.attachment_id, read.size, read.max_bytes) == ("att_1", 3, 9)
    download = links.download("att_1")[0].rsplit("/", 1)[1]
    assert links.read_download(download) == "att_1"
    assert links.read_upload(download) is None
    other_key = AttachmentLinks(SecretBox(b"x" * 32), "https://gw.example.test")
    assert other_key.read_download(download) is None


@pytest.fixture
def filesystem_world(tmp_path: Path, database_url: str) -> Iterator[tuple[World, Path]]:
    store = tmp_path / "attachments"
    settings = make_settings(database_url, attachment_store="filesystem", attachment_dir=str(store))
    with GatewayClient.running(settings) as client:
        yield World.create(client), store


def test_a_directory_can_hold_the_content(filesystem_world: tuple[World, Path]) -> None:
    world, store = filesystem_world
    run = new_run(world)
    prepared = _prepare(world, run["run_id"], {"name": "notes.md", "content_type": "text/markdown"})
    upload(world, prepared[0], b"# Notes\n")
    [path] = [p for p in store.rglob("*") if p.is_file()]
    assert path.read_bytes() == b"# Notes\n"
    body = {"message": "notes", "attachments": [prepared[0]["attachment_id"]]}
    world.api("POST", f"/agent/runs/{run['run_id']}/followups", json=body)
    [file] = Runner(world).claim()[0]["attachments"]
    assert _download(world, file["download_url"]).content == b"# Notes\n"


def test_base64_is_not_decoded_on_upload(world: World) -> None:
    """The upload is the bytes as sent (no JSON, no base64): what arrives is what is stored."""
    run = new_run(world)
    prepared = _prepare(world, run["run_id"], {"content_type": "application/octet-stream"})[0]
    raw = base64.b64encode(b"\x00\x01binary")
    upload(world, prepared, raw)
    body = {"message": "raw", "attachments": [prepared["attachment_id"]]}
    world.api("POST", f"/agent/runs/{run['run_id']}/followups", json=body)
    [file] = Runner(world).claim()[0]["attachments"]
    assert _download(world, file["download_url"]).content == raw


def test_a_webhook_runs_payload_reaches_its_runner_as_an_attachment(world: World) -> None:
    factory = f"/factory/{world.factory_uid}"
    hook = world.api("POST", f"{factory}/webhooks", json={"name": "CI"}).json()
    trigger = {"provider": "webhook", "event": "received", "filter": {"webhook_ids": [hook["uid"]]}}
    made = world.api(
        "POST",
        f"{factory}/automations",
        json={"name": "On CI", "prompt": "Look at the build.", "triggers": [trigger]},
    )
    assert made.status_code == 201, made.text
    payload = b'{"build": 42, "status": "failed"}'
    sent = world.client.post(
        f"/webhooks/w/{hook['uid']}",
        content=payload,
        headers={"Authorization": f"Bearer {hook['secret']}", "Content-Type": "application/json"},
    )
    assert sent.status_code == 202, sent.text

    def webhook_run() -> Any:
        runs = world.api("GET", "/agent/runs", params={"source": "WEBHOOK"}).json()["runs"]
        return runs[0] if runs else None

    run = eventually(webhook_run)
    [claimed] = Runner(world).claim()
    assert claimed["run_id"] == run["run_id"] and claimed["event_payload"] is True
    [file] = claimed["attachments"]
    assert (file["name"], file["content_type"]) == ("event-payload.json", "application/json")
    got = _download(world, file["download_url"])
    assert got.content == payload and got.headers["content-type"] == "application/json"
