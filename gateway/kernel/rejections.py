"""Why a delivery was refused: one code per distinct cause (docs/ingress.md, "Rejection reasons").

The code is logged and stored on the delivery record for the operator; the sender's response
never carries it (a 401 says only that authentication failed, whatever the cause).
"""

from __future__ import annotations

import enum


class Reason(enum.StrEnum):
    # authentication (401)
    HEADER_MISSING = "header_missing"  # no credential / signature / timestamp / id header
    HEADER_MALFORMED = "header_malformed"  # present but not in the scheme's format
    SIGNATURE_MISMATCH = "signature_mismatch"  # well-formed, but no signature matches the body
    TIMESTAMP_STALE = "timestamp_stale"  # signed timestamp older than the tolerance
    TIMESTAMP_FUTURE = "timestamp_future"  # signed timestamp too far ahead
    TOKEN_UNKNOWN = "token_unknown"  # noqa: S105 (a code) bearer or URL token not this webhook's
    CREDENTIAL_UNUSABLE = "credential_unusable"  # the webhook's own secret could not be loaded
    # refused before or after authentication
    TOO_LARGE = "too_large"  # 413
    AUTH_RATE_LIMITED = "auth_rate_limited"  # 429: failed-auth budget of the source spent
    RATE_LIMITED = "rate_limited"  # 429: the webhook's delivery rate
    INVALID_JSON = "invalid_json"  # 400
    BACKLOG_FULL = "backlog_full"  # 503, nothing recorded (logged and counted only)
