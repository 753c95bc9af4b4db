"""The console's login session: the API key and a session id, encrypted into an HttpOnly,
SameSite=Strict cookie, and the CSRF token its forms carry.

The cookie holds the key and a random session id, encrypted with the service's secret box
(Fernet: authenticated, so a changed cookie is refused). The session is kept on the server too
(gateway/webhook_gateway/console/stored_sessions.py): it lasts SESSION_MAX_AGE_S, and logging out
ends it there, so the old cookie stops working at once. The key is checked against the store on
every request, so revoking it ends the session at once as well.

Transport: the cookie is `Secure` when the browser used https, as the connection says or, from a
trusted proxy (GATEWAY_TRUSTED_PROXIES), as its X-Forwarded-Proto says. Plain http is served only
to a client on this machine, so a key never crosses a network in the clear; a request a proxy
forwarded (it carries forwarding headers) is never taken for a local one on the strength of the
proxy's loopback address.

CSRF: every POST form carries a token derived (HMAC) from the session cookie; a POST without the
matching token, or whose Origin header names another site, is refused. SameSite=Strict already
keeps the cookie off cross-site requests; the token is the second lock.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.accounts.identities import Principal, authenticate
from gateway.foundation.services import Services
from gateway.http.trusted_proxies import TrustedProxies
from gateway.kernel.security import SecretBox
from gateway.webhook_gateway.console import stored_sessions

COOKIE = "gateway_console"
SESSION_MAX_AGE_S = 12 * 3600
PATH = "/console"
# headers a proxy adds to what it forwards: their presence says the client is elsewhere
FORWARDING_HEADERS = ("x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "forwarded")


class NotLoggedIn(Exception):
    """No valid session: the handler sends the browser to the login page."""


class Refused(Exception):
    """A request the console will not serve (bad CSRF token, plain http from afar)."""


def _proxies(request: Request) -> TrustedProxies:
    services: Services = request.state.services
    return services.proxies


def _peer(request: Request) -> str | None:
    return request.client.host if request.client else None


def scheme_of(request: Request) -> str:
    """The scheme the browser used (a trusted proxy's X-Forwarded-Proto, else the connection's)."""
    forwarded = request.headers.get("x-forwarded-proto")
    return _proxies(request).scheme(_peer(request), request.url.scheme, forwarded)


def is_secure(request: Request) -> bool:
    return scheme_of(request) == "https"


def check_transport(request: Request) -> None:
    """Over plain http, only from this machine: the login form carries an API key."""
    if is_secure(request):
        return
    proxies, peer = _proxies(request), _peer(request)
    forwarded_for = request.headers.get("x-forwarded-for")
    if proxies.trusts(peer):
        # a trusted proxy that does not say whom it forwards for: the client is unknown
        if forwarded_for is None or not _loopback(proxies.client(peer, forwarded_for)):
            raise Refused("the console needs https (plain http is served to this machine only)")
    elif any(name in request.headers for name in FORWARDING_HEADERS):
        proxies.client(peer, forwarded_for)  # logs the untrusted proxy, once
        raise Refused(
            f"the console needs https: this request was forwarded by {peer}, which is not in "
            "GATEWAY_TRUSTED_PROXIES, so its client cannot be told apart from one afar "
            "(see docs/console.md)"
        )
    elif not _loopback(peer or ""):
        raise Refused("the console needs https (plain http is served to this machine only)")


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host in ("localhost", "testclient")


async def open_session(services: Services, response: Response, api_key: str, secure: bool) -> None:
    async with services.database.transaction() as conn:
        session_id = await stored_sessions.open_session(conn, SESSION_MAX_AGE_S)
    sealed = services.secret_box.encrypt(orjson.dumps({"k": api_key, "s": session_id}).decode())
    response.set_cookie(
        COOKIE,
        sealed,
        max_age=SESSION_MAX_AGE_S,
        path=PATH,
        httponly=True,
        samesite="strict",
        secure=secure,
    )


async def close_session(
    services: Services, request: Request, response: Response, secure: bool
) -> None:
    """Ends the session on the server (the cookie is dead wherever a copy of it is) and asks the
    browser to drop the cookie."""
    _api_key, session_id = _unsealed(services.secret_box, request)
    async with services.database.transaction() as conn:
        await stored_sessions.end_session(conn, session_id)
    response.delete_cookie(COOKIE, path=PATH, httponly=True, samesite="strict", secure=secure)


async def principal_of(request: Request, services: Services) -> Principal:
    api_key, session_id = _unsealed(services.secret_box, request)
    async with services.database.read() as conn:
        if not await stored_sessions.is_live(conn, session_id):
            raise NotLoggedIn
        principal = await authenticate(conn, api_key)
    if principal is None:
        raise NotLoggedIn
    return principal


def _unsealed(box: SecretBox, request: Request) -> tuple[str, str]:
    """(API key, session id) of the request's cookie."""
    sealed = request.cookies.get(COOKIE)
    if not sealed:
        raise NotLoggedIn
    try:
        session = orjson.loads(box.decrypt(sealed))
        return str(session["k"]), str(session["s"])
    except (ValueError, KeyError, TypeError) as exc:
        raise NotLoggedIn from exc


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
    return f"{scheme_of(request)}://{request.url.netloc}"
