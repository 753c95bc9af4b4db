"""The attachment stores behind one interface: the SQL store (SQLite and PostgreSQL), a
directory, and an S3-compatible object store (moto's S3 server over real HTTP); the S3 requests'
signatures are botocore's own."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import botocore.auth
import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from moto.server import ThreadedMotoServer

from gateway.foundation.blobs import BlobStore, DatabaseBlobs, FilesystemBlobs, open_blob_store
from gateway.foundation.blobs.s3 import S3Blobs, S3Error
from gateway.foundation.blobs.sigv4 import signed_headers
from gateway.foundation.store import create_database, migrate
from gateway.kernel.attachment_storage import AttachmentStorage, S3Config, parse_attachment_storage
from testbed.procs import free_port
from tests.conftest import make_settings

pytestmark = pytest.mark.service  # its own redis-server, processes or sockets

KEY = "att/att_01hx/report.log"


async def _check_round_trip(store: BlobStore) -> None:
    try:
        assert await store.get(KEY) is None
        await store.put(KEY, b"first\x00bytes", "text/plain")
        assert await store.get(KEY) == b"first\x00bytes"
        await store.put(KEY, b"second", "text/plain")  # replaces
        assert await store.get(KEY) == b"second"
        await store.delete(KEY)
        assert await store.get(KEY) is None
        await store.delete(KEY)  # unknown: nothing happens
    finally:
        await store.close()


def _round_trip(store: BlobStore) -> None:
    asyncio.run(_check_round_trip(store))


def test_the_sql_store_keeps_content(database_url: str) -> None:
    async def go() -> None:
        database = create_database(make_settings(database_url).database_url)
        try:
            await migrate(database)
            await _check_round_trip(DatabaseBlobs(database))
        finally:
            await database.close()

    asyncio.run(go())


def test_a_directory_keeps_content(tmp_path: Path) -> None:
    _round_trip(FilesystemBlobs(tmp_path / "blobs"))
    assert list((tmp_path / "blobs").rglob("*.upload-*")) == []  # no temporary file left
    with pytest.raises(ValueError, match="segments"):
        asyncio.run(FilesystemBlobs(tmp_path).put("att/../escape", b"x", "text/plain"))


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def _s3_config(endpoint: str, bucket: str) -> S3Config:
    return S3Config(
        bucket=bucket,
        endpoint_url=endpoint,
        region="eu-west-1",
        access_key_id="AKIDEXAMPLE",
        secret_access_key="secret",
        prefix="gw/",
    )


def _create_bucket(endpoint: str, bucket: str) -> None:
    import httpx

    body = (
        b"<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint>"
        b"</CreateBucketConfiguration>"
    )
    headers = signed_headers(
        "PUT",
        f"{endpoint}/{bucket}",
        body,
        region="eu-west-1",
        access_key_id="AKIDEXAMPLE",
        secret_access_key="secret",
        now=datetime.now(UTC),
    )
    assert httpx.put(f"{endpoint}/{bucket}", content=body, headers=headers).status_code == 200


def test_an_s3_compatible_store_keeps_content(s3_endpoint: str) -> None:
    _create_bucket(s3_endpoint, "attachments")
    _round_trip(S3Blobs(_s3_config(s3_endpoint, "attachments")))
    storage = parse_attachment_storage(
        {
            "ATTACHMENT_STORE": "s3",
            "S3_BUCKET": "attachments",
            "S3_ENDPOINT_URL": s3_endpoint,
            "S3_ACCESS_KEY_ID": "AKIDEXAMPLE",
            "S3_SECRET_ACCESS_KEY": "secret",
        }
    )
    assert isinstance(open_blob_store(storage, None), S3Blobs)  # type: ignore[arg-type]


def test_an_unknown_bucket_is_an_error_not_missing_content(s3_endpoint: str) -> None:
    store = S3Blobs(_s3_config(s3_endpoint, "no-such-bucket"))

    async def go() -> None:
        try:
            await store.put(KEY, b"x", "text/plain")
        finally:
            await store.close()

    with pytest.raises(S3Error, match="404"):
        asyncio.run(go())


@pytest.mark.parametrize(
    ("method", "key", "payload"),
    [("PUT", "gw/att/att_1/a%20b%2Bc.txt", b"hello"), ("GET", "gw/att/x/~user.png", b"")],
)
def test_s3_signatures_are_botocores(
    method: str, key: str, payload: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Signature Version 4 as botocore (the AWS SDK) computes it for the same request (a key
    percent-encoded once in the URL, as S3Blobs sends it)."""
    now = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    url = f"https://objects.example.test:9000/bucket/{key}"
    ours = signed_headers(
        method,
        url,
        payload,
        region="eu-west-1",
        access_key_id="AKIDEXAMPLE",
        secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        now=now,
    )
    request = AWSRequest(method=method, url=url, data=payload, headers={})
    auth = S3SigV4Auth(
        Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"), "s3", "eu-west-1"
    )
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: now.replace(tzinfo=None))
    auth.add_auth(request)
    assert ours["Authorization"] == request.headers["Authorization"]
    assert ours["x-amz-content-sha256"] == request.headers["X-Amz-Content-SHA256"]


def test_the_default_store_is_the_sql_store() -> None:
    assert AttachmentStorage().store == "database"
    assert parse_attachment_storage({}).store == "database"
    for bad in ({"ATTACHMENT_STORE": "ftp"}, {"ATTACHMENT_STORE": "s3"}, {"ATTACHMENT_TYPES": "x"}):
        with pytest.raises(ValueError, match=r"ATTACHMENT_STORE|S3_BUCKET|ATTACHMENT_TYPES"):
            parse_attachment_storage(bad)
