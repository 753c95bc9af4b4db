"""One domain error hierarchy; rendered as problem+json only at the HTTP edge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ServiceError(Exception):
    """Base of every error the service answers with. Subclasses set status, code and title."""

    status = 500
    code = "internal_error"
    title = "Internal server error"

    def __init__(self, detail: str = "", *, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.headers = headers or {}

    def members(self) -> dict[str, Any]:
        """Extension members of its problem document (RFC 9457 section 3.2), JSON values."""
        return {}


class InvalidRequest(ServiceError):
    status, code, title = 400, "invalid_request", "Invalid request"


class InvalidJson(ServiceError):
    status, code, title = 400, "invalid_json", "Body is not valid JSON"


class Unauthenticated(ServiceError):
    status, code, title = 401, "unauthenticated", "Authentication required or failed"


class Forbidden(ServiceError):
    status, code, title = 403, "forbidden", "Access denied"


class NotFound(ServiceError):
    status, code, title = 404, "not_found", "Not found"


class MethodNotAllowed(ServiceError):
    status, code, title = 405, "method_not_allowed", "Method not allowed"


class RequestTimeout(ServiceError):
    status, code, title = 408, "request_timeout", "Request body not received in time"


class Conflict(ServiceError):
    status, code, title = 409, "conflict", "Conflict"


class WebhookLimitReached(Conflict):
    code, title = "webhook_limit_reached", "Webhook limit reached"


class NoForeman(Conflict):
    code, title = "no_foreman", "Factory has no foreman agent"


class AgentIsForeman(Conflict):
    code, title = "agent_is_foreman", "Agent is a factory's foreman"


class RunPending(Conflict):
    code, title = "run_pending", "Run is pending; retry after a moment"


class LeaseLost(Conflict):
    code, title = "lease_lost", "Run not held by this runner"


class PayloadTooLarge(ServiceError):
    status, code, title = 413, "payload_too_large", "Body too large"


class UriTooLong(ServiceError):
    status, code, title = 414, "uri_too_long", "Request target too long"


class HeadersTooLarge(ServiceError):
    status, code, title = 431, "headers_too_large", "Request header fields too large"


class Unprocessable(ServiceError):
    status, code, title = 422, "unprocessable", "Request cannot be processed"


class UnknownAttachment(Unprocessable):
    code, title = "unknown_attachment", "Attachment unknown for the newest run"


class AttachmentNotUploaded(Unprocessable):
    code, title = "attachment_not_uploaded", "Attachment has no content yet"


class AttachmentUploaded(Conflict):
    code, title = "attachment_uploaded", "Attachment content was uploaded already"


class UnsupportedMediaType(ServiceError):
    status, code, title = 415, "unsupported_media_type", "Content type not accepted"


class DebugUnavailable(Conflict):
    code, title = "debug_session_unavailable", "No debug session can be opened"


class NotCancellable(Unprocessable):
    code, title = "not_cancellable", "Run type does not support cancellation"


class InvalidFactoryTree(Unprocessable):
    """A factory definition tree that cannot apply: its problems, as diagnostics (Structs with
    path, line, column, code and message: factory_format.Diagnostic), sorted. The answer lists
    the first MAX_LISTED; `diagnostics_omitted` counts the rest, and the problems a file's
    scan counted past the ones it keeps (`omitted`)."""

    code, title = "invalid_factory_tree", "The factory definition tree has problems"
    MAX_LISTED = 100

    def __init__(self, diagnostics: Sequence[Any], omitted: int = 0) -> None:
        first = diagnostics[0]
        where = first.path if first.line is None else f"{first.path}:{first.line}"
        others = len(diagnostics) - 1 + omitted
        more = f" (and {others} more)" if others else ""
        super().__init__(f"{where}: {first.message}{more}")
        self.diagnostics = list(diagnostics[: self.MAX_LISTED])
        self.omitted = omitted + max(0, len(diagnostics) - self.MAX_LISTED)

    def members(self) -> dict[str, Any]:
        import msgspec

        listed: dict[str, Any] = {"diagnostics": msgspec.to_builtins(self.diagnostics)}
        if self.omitted:
            listed["diagnostics_omitted"] = self.omitted
        return listed


class RateLimited(ServiceError):
    status, code, title = 429, "rate_limited", "Too many requests"

    def __init__(self, detail: str = "", *, retry_after: int) -> None:
        super().__init__(detail, headers={"Retry-After": str(max(1, retry_after))})
        self.retry_after = max(1, retry_after)


class Unavailable(ServiceError):
    status, code, title = 503, "unavailable", "Service temporarily unavailable"

    def __init__(self, detail: str = "", *, retry_after: int = 1) -> None:
        super().__init__(detail, headers={"Retry-After": str(max(1, retry_after))})


class NotReady(ServiceError):
    status, code, title = 503, "not_ready", "Not ready"


class BacklogFull(Unavailable):
    code, title = "backlog_full", "Too many deliveries wait for evaluation"


class ManagedSecret(Conflict):
    code, title = "managed_secret", "Secret is a managed team secret"


class RunTerminal(InvalidRequest):
    code, title = "run_terminal", "Run already ended"


class RunNotLive(Conflict):
    code, title = "run_not_live", "Run has no live session"


class FactoryMetricsRateLimited(RateLimited):
    code, title = "metrics_rate_limited", "Too many factory metrics requests"


class ValidationRateLimited(RateLimited):
    code, title = "validation_rate_limited", "Too many factory file validations"
