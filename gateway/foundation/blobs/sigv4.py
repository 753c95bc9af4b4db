"""AWS Signature Version 4 for S3 requests (path-style URLs): the Authorization header every
S3-compatible store checks. Pure: a request's parts in, its headers out."""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from urllib.parse import urlsplit

ALGORITHM = "AWS4-HMAC-SHA256"
SERVICE = "s3"


def signed_headers(
    method: str,
    url: str,
    payload: bytes,
    *,
    region: str,
    access_key_id: str,
    secret_access_key: str,
    now: datetime,
) -> dict[str, str]:
    """host, x-amz-content-sha256, x-amz-date and Authorization for the request (`now` in UTC;
    `url` as sent: its path percent-encoded once, no query string)."""
    parts = urlsplit(url)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    payload_hash = hashlib.sha256(payload).hexdigest()
    headers = {"host": parts.netloc, "x-amz-content-sha256": payload_hash, "x-amz-date": amz_date}
    names = ";".join(sorted(headers))
    canonical = "\n".join(
        [
            method,
            parts.path or "/",  # S3 signs the path as sent, not encoded again
            "",  # no query string
            *(f"{name}:{headers[name]}" for name in sorted(headers)),
            "",
            names,
            payload_hash,
        ]
    )
    scope = f"{day}/{region}/{SERVICE}/aws4_request"
    to_sign = "\n".join([ALGORITHM, amz_date, scope, _sha256(canonical)])
    key = _signing_key(secret_access_key, day, region)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = (
        f"{ALGORITHM} Credential={access_key_id}/{scope}, SignedHeaders={names}, "
        f"Signature={signature}"
    )
    return headers


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _signing_key(secret: str, day: str, region: str) -> bytes:
    key = f"AWS4{secret}".encode()
    for part in (day, region, SERVICE, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key
