"""Attachment content in an S3-compatible object store (GATEWAY_S3_*): path-style requests
(`<endpoint>/<bucket>/<prefix><key>`) signed with Signature Version 4."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

import httpx

from gateway.foundation.blobs.sigv4 import signed_headers
from gateway.kernel.attachment_storage import S3Config

TIMEOUT_S = 30.0


class S3Error(RuntimeError):
    """The object store refused or failed a request."""


class S3Blobs:
    def __init__(self, config: S3Config, client: httpx.AsyncClient | None = None) -> None:
        self.config = config
        self.client = client or httpx.AsyncClient(timeout=TIMEOUT_S)

    def _url(self, key: str) -> str:
        path = quote(f"{self.config.prefix}{key}", safe="/-_.~")
        return f"{self.config.endpoint_url}/{self.config.bucket}/{path}"

    async def _send(
        self, method: str, key: str, payload: bytes = b"", **extra: str
    ) -> httpx.Response:
        url = self._url(key)
        headers = signed_headers(
            method,
            url,
            payload,
            region=self.config.region,
            access_key_id=self.config.access_key_id,
            secret_access_key=self.config.secret_access_key,
            now=datetime.now(UTC),
        )
        return await self.client.request(method, url, content=payload, headers=headers | extra)

    async def put(self, key: str, content: bytes, content_type: str) -> None:
        answer = await self._send("PUT", key, content, **{"content-type": content_type})
        _check(answer, "PUT", key)

    async def get(self, key: str) -> bytes | None:
        answer = await self._send("GET", key)
        if answer.status_code == 404:
            return None
        _check(answer, "GET", key)
        return answer.content

    async def delete(self, key: str) -> None:
        answer = await self._send("DELETE", key)
        if answer.status_code != 404:
            _check(answer, "DELETE", key)

    async def close(self) -> None:
        await self.client.aclose()


def _check(answer: httpx.Response, method: str, key: str) -> None:
    if answer.status_code >= 300:
        raise S3Error(f"S3 {method} {key}: {answer.status_code} {answer.text[:300]}")
