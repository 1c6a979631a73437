"""The error hierarchy, and the one place that turns an error response into its class."""

from __future__ import annotations

import email.utils
import time
from typing import Any, Dict, Mapping, Optional, Type

from ._types import ErrorCode, ErrorDetails


class ConvoError(Exception):
    """Every error the client raises. API errors carry the response's status, code and request id."""

    status: Optional[int]
    """HTTP status, or None when no response arrived."""
    code: str
    """The API's `error.code`, or `connection_error` / `timeout` when no response arrived."""
    message: str
    details: Optional[ErrorDetails]
    """For a 400: `field` and `constraint` (and `existing_id` for `unique`)."""
    request_id: Optional[str]
    """The response's `X-Request-Id`: quote it to support."""
    body: Any
    """The parsed JSON body of the error response, if any."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: Optional[int] = None,
        details: Optional[ErrorDetails] = None,
        request_id: Optional[str] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.details = details
        self.request_id = request_id
        self.body = body

    def __str__(self) -> str:
        return f"{self.message} (request {self.request_id})" if self.request_id else self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(message={self.message!r}, status={self.status!r}, code={self.code!r}, request_id={self.request_id!r})"


class BadRequestError(ConvoError):
    """400: the request is invalid; `details["field"]` and `details["constraint"]` say what to fix."""


class UnauthorizedError(ConvoError):
    """401: the API key is missing, unknown or revoked."""


class ForbiddenError(ConvoError):
    """403: the key may not do this (a read-only key writing, a webhook key calling the API)."""


class NotFoundError(ConvoError):
    """404: no such resource in this account."""


class RateLimitedError(ConvoError):
    """429: too many requests; `retry_after` is the number of seconds to wait."""

    retry_after: Optional[float]

    def __init__(self, message: str, *, retry_after: Optional[float] = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServerError(ConvoError):
    """5xx: the server failed; the request may be retried."""


class ConnectionError(ConvoError):  # noqa: A001 - the name the SDKs share; `convo.ConnectionError`
    """The request never got a response (DNS, refused connection, reset)."""


class TimeoutError(ConvoError):  # noqa: A001
    """No response within the timeout."""


_BY_CODE: Dict[str, Type[ConvoError]] = {
    "bad_request": BadRequestError,
    "unauthorized": UnauthorizedError,
    "forbidden": ForbiddenError,
    "not_found": NotFoundError,
    "rate_limited": RateLimitedError,
    "server_error": ServerError,
}

_BY_STATUS: Dict[int, ErrorCode] = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 429: "rate_limited"}


def error_from_response(status: int, body: Any, headers: Mapping[str, str]) -> ConvoError:
    """The matching ConvoError subclass for an error response (`headers` with lower-case names)."""
    error: Dict[str, Any] = {}
    if isinstance(body, dict):
        inner = body.get("error")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if isinstance(inner, dict):
            error = dict(inner)  # pyright: ignore[reportUnknownArgumentType]
    raw_code = error.get("code")
    if isinstance(raw_code, str) and raw_code in _BY_CODE:
        code: str = raw_code
    else:
        code = _BY_STATUS.get(status, "server_error" if status >= 500 else "bad_request")
    message = error.get("message")
    details = error.get("details")
    fields: Dict[str, Any] = {
        "code": code,
        "status": status,
        "details": details if isinstance(details, dict) else None,
        "request_id": headers.get("x-request-id"),
        "body": body,
    }
    text = message if isinstance(message, str) else f"HTTP {status}"
    if code == "rate_limited":
        return RateLimitedError(text, retry_after=parse_retry_after(headers.get("retry-after")), **fields)
    return _BY_CODE[code](text, **fields)


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """`Retry-After` in seconds (or an HTTP date), as seconds."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return seconds if seconds >= 0 and seconds != float("inf") else None
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, at.timestamp() - time.time())
