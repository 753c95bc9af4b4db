"""The console's login session: the API key, encrypted into an HttpOnly, SameSite=Strict cookie,
and the CSRF token its forms carry.

The cookie holds the key encrypted with the service's secret box (Fernet: authenticated, so a
changed cookie is refused) and the time of login; a session lasts SESSION_MAX_AGE_S. The key is
checked against the store on every request, so revoking it ends the session at once. The
cookie is `Secure` when the request came over https; plain http is accepted only from a
loopback address (local use), so a key never crosses a network in the clear.

CSRF: every POST form carries a token derived (HMAC) from the session cookie; a POST without the
matching token, or whose Origin header names another site, is refused. SameSite=Strict already
keeps the cookie off cross-site requests; the token is the second lock.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import time

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.identities import Principal, authenticate
from gateway.security import SecretBox
from gateway.services import Services

COOKIE = "gateway_console"
SESSION_MAX_AGE_S = 12 * 3600
PATH = "/console"


class NotLoggedIn(Exception):
    """No valid session: the handler sends the browser to the login page."""


class Refused(Exception):
    """A request the console will not serve (bad CSRF token, plain http from afar)."""


def is_secure(request: Request) -> bool:
    return request.url.scheme == "https"


def check_transport(request: Request) -> None:
    """Over plain http, only from this machine: the login form carries an API key."""
    if is_secure(request):
        return
    host = request.client.host if request.client else ""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host in ("localhost", "testclient")
    if not loopback:
        raise Refused("the console needs https (plain http is served to this machine only)")


def open_session(box: SecretBox, response: Response, api_key: str, secure: bool) -> None:
    sealed = box.encrypt(orjson.dumps({"k": api_key, "t": int(time.time())}).decode())
    response.set_cookie(
        COOKIE,
        sealed,
        max_age=SESSION_MAX_AGE_S,
        path=PATH,
        httponly=True,
        samesite="strict",
        secure=secure,
    )


def close_session(response: Response, secure: bool) -> None:
    response.delete_cookie(COOKIE, path=PATH, httponly=True, samesite="strict", secure=secure)


async def principal_of(request: Request, services: Services) -> Principal:
    sealed = request.cookies.get(COOKIE)
    if not sealed:
        raise NotLoggedIn
    try:
        session = orjson.loads(services.secret_box.decrypt(sealed))
        api_key, since = str(session["k"]), int(session["t"])
    except (ValueError, KeyError, TypeError) as exc:
        raise NotLoggedIn from exc
    if time.time() - since > SESSION_MAX_AGE_S:
        raise NotLoggedIn
    async with services.database.read() as conn:
        principal = await authenticate(conn, api_key)
    if principal is None:
        raise NotLoggedIn
    return principal


def csrf_token(box: SecretBox, request: Request) -> str:
    sealed = request.cookies.get(COOKIE, "")
    return box.sign(b"csrf:" + hashlib.sha256(sealed.encode()).digest()[:16])


def check_post(box: SecretBox, request: Request, sent: str | None, *, token: bool = True) -> None:
    """A console POST: same-origin, and with the session's CSRF token (`token`: every form but
    the login form, which has no session yet)."""
    origin = request.headers.get("origin")
    if origin is not None and origin != _own_origin(request):
        raise Refused("cross-site form submissions are refused")
    if token and not hmac.compare_digest(sent or "", csrf_token(box, request)):
        raise Refused("the form's CSRF token is missing or stale: reload the page")


def _own_origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.url.netloc}"
