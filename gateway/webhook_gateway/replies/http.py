"""The HTTP side every provider client shares: the client they are given, and what a response
or a transport error means for the message (gateway/foundation/outbound/outcomes.py).

Clients are passed in, never made here: the outbound package supplies one that refuses private
addresses (GATEWAY_OUTBOUND_ALLOW_PRIVATE); an `httpx.AsyncClient` serves as well.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

import httpx

from gateway.foundation.outbound.outcomes import Failed, RetryLater

# what the provider said, cut to this many characters (an HTML error page says nothing more)
ERROR_TEXT = 300
# a provider asking for more than this is read as "later", and the dispatcher's backoff decides
MAX_AFTER = 3600.0
# statuses worth another try besides 5xx: request timeout, too early, too many requests
RETRYABLE = frozenset({408, 425, 429})


class HttpClient(Protocol):
    """The part of `httpx.AsyncClient` the provider clients use."""

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
    ) -> httpx.Response: ...


async def call(
    http: HttpClient,
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: Any = None,
) -> httpx.Response | RetryLater | Failed:
    """The response, whatever its status; a network failure as RetryLater; a URL that can never
    work (unsupported scheme, malformed) or any other HTTP error as Failed."""
    try:
        return await http.request(method, url, headers=headers, json=body)
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        return Failed(error=f"{type(exc).__name__}: {exc}")
    except httpx.TransportError as exc:
        return RetryLater(error=f"{type(exc).__name__}: {exc or 'no detail'}")
    except httpx.HTTPError as exc:  # not the network: a refused destination, too many redirects
        return Failed(error=f"{type(exc).__name__}: {exc}")


def refusal(response: httpx.Response) -> RetryLater | Failed | None:
    """None for a 2xx; else what the status means, with the provider's own error text."""
    status = response.status_code
    if 200 <= status < 300:
        return None
    error = f"{status} {response.reason_phrase}: {error_text(response)}".rstrip(": ")
    if status in RETRYABLE or status >= 500 or _rate_limited(response):
        return RetryLater(error=error, after=retry_after(response.headers), status=status)
    return Failed(error=error, gone=status in (404, 410), status=status)


def _rate_limited(response: httpx.Response) -> bool:
    """GitHub answers an exhausted rate limit (primary or secondary) with 403, not 429."""
    headers = response.headers
    return response.status_code == 403 and (
        headers.get("x-ratelimit-remaining") == "0" or "retry-after" in headers
    )


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait, from Retry-After (seconds or an HTTP date) or the reset time of a rate
    limit (GitHub `x-ratelimit-reset`, GitLab `ratelimit-reset`: Unix seconds; Linear
    `x-ratelimit-requests-reset`: Unix milliseconds). None when none is usable."""
    now = time.time() if now is None else now
    lowered = {key.lower(): value for key, value in headers.items()}
    value = lowered.get("retry-after")
    if value is not None:
        return _bounded(_seconds_or_date(value.strip(), now))
    for name, scale in (
        ("x-ratelimit-reset", 1.0),
        ("ratelimit-reset", 1.0),
        ("x-ratelimit-requests-reset", 0.001),
    ):
        reset = _number(lowered.get(name))
        if reset is not None:
            return _bounded(reset * scale - now)
    return None


def _seconds_or_date(value: str, now: float) -> float | None:
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        return parsedate_to_datetime(value).timestamp() - now
    except (TypeError, ValueError):
        return None


def _number(value: str | None) -> float | None:
    try:
        return None if value is None else float(value)
    except ValueError:
        return None


def _bounded(seconds: float | None) -> float | None:
    if seconds is None or seconds > MAX_AFTER or seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def error_text(response: httpx.Response) -> str:
    """The provider's message: GitHub and GitLab `message` (GitLab also `error`), Jira
    `errorMessages` and `errors`, Slack `error`; else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:ERROR_TEXT].strip()
    if not isinstance(body, dict):
        return str(body)[:ERROR_TEXT]
    parts: list[str] = []
    for key in ("message", "error", "error_description"):
        if isinstance(body.get(key), str):
            parts.append(body[key])
    messages = body.get("errorMessages")
    if isinstance(messages, list):
        parts.extend(str(item) for item in messages)
    errors = body.get("errors")
    if isinstance(errors, dict):
        parts.extend(f"{key}: {value}" for key, value in errors.items())
    return "; ".join(parts)[:ERROR_TEXT] if parts else str(body)[:ERROR_TEXT]


async def send_json(
    http: HttpClient, method: str, url: str, headers: Mapping[str, str], body: Any
) -> dict[str, Any] | RetryLater | Failed:
    """The JSON object a 2xx answered; a refusal, a network error or an answer that is no JSON
    object as its outcome."""
    response = await call(http, method, url, headers, body)
    if not isinstance(response, httpx.Response):
        return response
    refused = refusal(response)
    if refused is not None:
        return refused
    return json_object(response)


def json_object(response: httpx.Response) -> dict[str, Any] | Failed:
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return Failed(error=f"{response.status_code}: the answer is no JSON object")
    return answer


def message_id(answer: dict[str, Any], field: str = "id") -> str | Failed:
    """The created message's id (a number or a string in the answer) as text."""
    value = answer.get(field)
    if isinstance(value, bool) or not isinstance(value, int | str) or value == "":
        return Failed(error=f"the answer names no {field} of the message")
    return str(value)
