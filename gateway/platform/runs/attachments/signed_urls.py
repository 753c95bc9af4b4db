"""Signed URLs of attachment content on this gateway: a PUT that uploads one prepared attachment,
and a GET that downloads one. The token in the URL is the credential (an HMAC under
GATEWAY_SECRET_KEY of what it allows and until when), so neither needs an API key."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from gateway.kernel.security import SecretBox
from gateway.platform.runs.attachments.models import UploadGrant, UploadTarget

UPLOAD_URL_S = 900  # a prepared upload URL works this long
DOWNLOAD_URL_S = 3600  # a runner's download URL: long enough for the run to start and fetch
UPLOAD, DOWNLOAD = "att-up", "att-dl"  # what a token is for: one never passes for the other
UPLOAD_PATH = "/api/v1/agent/attachments/upload/"
DOWNLOAD_PATH = "/api/v1/agent/attachments/content/"


class AttachmentLinks:
    def __init__(self, box: SecretBox, base_url: str) -> None:
        """`base_url`: the gateway's address as the caller reached it (no trailing slash)."""
        self.box = box
        self.base_url = base_url

    def upload(self, grant: UploadGrant) -> UploadTarget:
        size = "" if grant.size is None else str(grant.size)
        expires = int(grant.expires_at.timestamp())
        fields = (UPLOAD, grant.attachment_id, grant.content_type, str(grant.max_bytes), size)
        token = self._sign(*fields, str(expires))
        return UploadTarget(
            url=f"{self.base_url}{UPLOAD_PATH}{token}",
            method="PUT",
            headers={"Content-Type": grant.content_type},
            max_bytes=grant.max_bytes,
            expires_at=grant.expires_at,
        )

    def download(self, attachment_id: str) -> tuple[str, datetime]:
        """A download URL of the attachment's content, and when it stops working."""
        expires = int(time.time()) + DOWNLOAD_URL_S
        token = self._sign(DOWNLOAD, attachment_id, str(expires))
        return f"{self.base_url}{DOWNLOAD_PATH}{token}", datetime.fromtimestamp(expires, UTC)

    def read_upload(self, token: str) -> UploadGrant | None:
        """What an upload token allows; None when altered, expired or not an upload token."""
        fields = self._fields(token, UPLOAD, 6)
        if fields is None or not fields[3].isdigit():
            return None
        _, attachment_id, content_type, max_bytes, size, expires = fields
        return UploadGrant(
            attachment_id=attachment_id,
            content_type=content_type,
            max_bytes=int(max_bytes),
            size=int(size) if size.isdigit() else None,
            expires_at=datetime.fromtimestamp(int(expires), UTC),
        )

    def read_download(self, token: str) -> str | None:
        """The attachment a download token names; None when altered, expired or not one."""
        fields = self._fields(token, DOWNLOAD, 3)
        return None if fields is None else fields[1]

    def _sign(self, *fields: str) -> str:
        return self.box.sign("|".join(fields).encode())

    def _fields(self, token: str, purpose: str, count: int) -> list[str] | None:
        data = self.box.unsign(token)
        fields = (data or b"").decode(errors="replace").split("|")
        if len(fields) != count or fields[0] != purpose or not fields[-1].isdigit():
            return None
        return None if int(fields[-1]) < time.time() else fields
