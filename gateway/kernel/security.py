"""Credentials: API keys (shown once, stored hashed), secrets encrypted at rest, signed cursors."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

API_KEY_PREFIX = "gk_"


def new_api_key() -> str:
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """Keys and bearer tokens carry 256 bits of entropy, so one SHA-256 is a sound hash."""
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def new_webhook_token() -> str:
    return "wht_" + secrets.token_urlsafe(32)


def new_connection_secret() -> str:
    """A provider connection's secret of the user's choosing (GitHub, GitLab, Jira)."""
    return "pcs_" + secrets.token_urlsafe(32)


def new_standard_webhooks_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


class SecretBox:
    """Encrypts secret material (HMAC keys, managed team secrets) with a key from settings."""

    def __init__(self, key: bytes) -> None:
        self._fernet_key = base64.urlsafe_b64encode(hashlib.sha256(b"secrets:" + key).digest())
        self._fernet: Fernet | None = None
        self._signing_key = hashlib.sha256(b"cursors:" + key).digest()

    def _cipher(self) -> Fernet:
        if self._fernet is None:
            # imported on first use: a process that never decrypts (the evaluator) saves ~6 MB
            from cryptography.fernet import Fernet

            self._fernet = Fernet(self._fernet_key)
        return self._fernet

    def encrypt(self, plaintext: str) -> str:
        return self._cipher().encrypt(plaintext.encode()).decode()

    def decrypt(self, token: str) -> str:
        from cryptography.fernet import InvalidToken

        try:
            return self._cipher().decrypt(token.encode()).decode()
        except InvalidToken as exc:
            raise ValueError(
                "secret cannot be decrypted with the configured GATEWAY_SECRET_KEY"
            ) from exc

    def sign(self, data: bytes) -> str:
        mac = hmac.digest(self._signing_key, data, "sha256")[:16]
        return base64.urlsafe_b64encode(data + mac).decode().rstrip("=")

    def unsign(self, token: str) -> bytes | None:
        """The data inside a token made by `sign`, or None when it was altered."""
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except ValueError:
            return None
        data, mac = raw[:-16], raw[-16:]
        expected = hmac.digest(self._signing_key, data, "sha256")[:16]
        return data if len(raw) > 16 and hmac.compare_digest(mac, expected) else None
