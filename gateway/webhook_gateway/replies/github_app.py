"""GitHub App authentication: an RS256 JWT signed with the app's private key (`iss` = the app's
id, at most 10 minutes), exchanged at `POST {api}/app/installations/{id}/access_tokens` for an
installation token (about an hour), which is cached until shortly before it expires; or for
one repository's contents alone (`repository_token`), what a runner clones it with."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

import httpx
import msgspec

from gateway.foundation.outbound.outcomes import Failed, RetryLater
from gateway.webhook_gateway.replies.http import HttpClient, call, refusal

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

API_VERSION = "2022-11-28"
# GitHub refuses a JWT that lives longer than 10 minutes; `iat` a minute back allows for clocks
# that run a little apart
JWT_BACKDATE = 60
JWT_LIFETIME = 540
# an installation token is renewed this long before its expiry, so none is used as it lapses
RENEW_BEFORE = 300.0


def load_private_key(pem: str) -> RSAPrivateKey:
    """The app's private key (the .pem GitHub hands out); ValueError when it is not an RSA
    private key in PEM."""
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem.strip().encode(), password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError("not a PEM private key without a passphrase") from exc
    if not isinstance(key, RSAPrivateKey):
        raise ValueError("not an RSA key (GitHub Apps sign with RSA)")
    return key


def app_jwt(app_id: str, private_key: RSAPrivateKey, now: float) -> str:
    from cryptography.hazmat.primitives.asymmetric.padding import PKCS1v15
    from cryptography.hazmat.primitives.hashes import SHA256

    issued = int(now) - JWT_BACKDATE
    claims = {"iat": issued, "exp": issued + JWT_LIFETIME, "iss": _issuer(app_id)}
    signing_input = _b64(b'{"alg":"RS256","typ":"JWT"}') + "." + _b64(msgspec.json.encode(claims))
    signature = private_key.sign(signing_input.encode(), PKCS1v15(), SHA256())
    return signing_input + "." + _b64(signature)


def _issuer(app_id: str) -> int | str:
    """A numeric app id as a number; a client id (`Iv23...`), which GitHub takes too, as is."""
    return int(app_id) if app_id.isdigit() else app_id


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class _Token(msgspec.Struct):
    token: str
    expires_at: datetime


class InstallationTokens:
    """Installation tokens by (API root, app id, installation id). One per process is enough:
    concurrent replies for one installation wait for a single exchange."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._tokens: dict[tuple[str, str, str], tuple[str, float]] = {}
        self._scoped: dict[tuple[str, str, str, str], tuple[str, datetime]] = {}
        self._locks: dict[tuple[str, ...], asyncio.Lock] = {}

    async def token(
        self, http: HttpClient, api: str, app_id: str, private_key: str, installation_id: str
    ) -> tuple[str, bool] | RetryLater | Failed:
        """(token, fresh): `fresh` when it was exchanged just now, not taken from the cache."""
        key = (api, app_id, installation_id)
        async with self._locks.setdefault(key, asyncio.Lock()):
            cached = self._tokens.get(key)
            if cached is not None and cached[1] - RENEW_BEFORE > self._clock():
                return cached[0], False
            got = await self._exchange(http, api, app_id, private_key, installation_id)
            if isinstance(got, _Token):
                self._tokens[key] = (got.token, got.expires_at.timestamp())
                return got.token, True
            return got

    async def repository_token(
        self,
        http: HttpClient,
        api: str,
        app_id: str,
        private_key: str,
        installation_id: str,
        repository: str,
    ) -> tuple[str, datetime] | RetryLater | Failed:
        """(token, expiry) of an installation token for the one `repository` (its name, the
        owner being the installation's) that may read its contents and nothing else: what a
        runner clones it with. Cached like the others, per repository."""
        key = (api, app_id, installation_id, repository)
        async with self._locks.setdefault(key, asyncio.Lock()):
            cached = self._scoped.get(key)
            if cached is not None and cached[1].timestamp() - RENEW_BEFORE > self._clock():
                return cached
            body: dict[str, object] = {
                "repositories": [repository],
                "permissions": {"contents": "read"},
            }
            got = await self._exchange(http, api, app_id, private_key, installation_id, body)
            if isinstance(got, _Token):
                self._scoped[key] = (got.token, got.expires_at)
                return self._scoped[key]
            return got

    def forget(self, api: str, app_id: str, installation_id: str) -> None:
        """Drops a token the API refused (the installation was suspended, the token revoked)."""
        self._tokens.pop((api, app_id, installation_id), None)

    async def _exchange(
        self,
        http: HttpClient,
        api: str,
        app_id: str,
        private_key: str,
        installation_id: str,
        body: dict[str, object] | None = None,
    ) -> _Token | RetryLater | Failed:
        """`body`: what the token may do (`repositories`, `permissions`); None: all the
        installation may."""
        try:
            signed = app_jwt(app_id, load_private_key(private_key), self._clock())
        except ValueError as exc:
            return Failed(error=f"private_key: {exc}")
        headers = {
            "Authorization": f"Bearer {signed}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
        }
        url = f"{api}/app/installations/{installation_id}/access_tokens"
        response = await call(http, "POST", url, headers, body)
        if not isinstance(response, httpx.Response):
            return response
        refused = refusal(response)
        if refused is not None:
            return _about_installation(refused)
        try:
            return msgspec.json.decode(response.content, type=_Token)
        except msgspec.DecodeError as exc:
            return Failed(error=f"installation token: unexpected answer ({exc})")


def _about_installation(refused: RetryLater | Failed) -> RetryLater | Failed:
    if isinstance(refused, Failed):
        return Failed(
            error=f"GitHub App installation token: {refused.error}", status=refused.status
        )
    return refused
