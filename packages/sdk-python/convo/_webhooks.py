"""Verifying webhook deliveries (Standard Webhooks), as the TypeScript SDK's `verifyWebhook` does."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from datetime import datetime
from typing import Iterable, Mapping, Optional, Protocol, Tuple, Union, cast

from ._types import Event

DEFAULT_TOLERANCE = 300
"""Seconds a delivery's `webhook-timestamp` may be away from now."""


class WebhookVerificationError(Exception):
    """The delivery is not signed by the secret, too old or too new, or not an event."""


class HeaderItems(Protocol):
    """Anything with `.items()` of header names and values: a dict, `http.server`'s `self.headers`,
    a Flask or Django request's headers. Names are matched without regard to case."""

    def items(self) -> Iterable[Tuple[str, object]]: ...


Headers = Union[Mapping[str, str], HeaderItems]


def _header(headers: Headers, name: str) -> Optional[str]:
    for key, value in headers.items():
        if key.lower() == name:
            if isinstance(value, (list, tuple)):
                first = cast("Tuple[object, ...]", value)[:1]
                value = first[0] if first else None
            return value if isinstance(value, str) else None
    return None


def _decode_secret(secret: str) -> bytes:
    value = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    # Forgiving base64, as `atob` reads it: ASCII whitespace ignored, padding optional.
    value = re.sub(r"[\t\n\f\r ]", "", value)
    if len(value) % 4 == 1:
        raise WebhookVerificationError("The secret is not a webhook key (whsec_…)")
    try:
        return base64.b64decode(value.rstrip("=") + "=" * (-len(value.rstrip("=")) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise WebhookVerificationError("The secret is not a webhook key (whsec_…)") from None


def _signature(key: bytes, webhook_id: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(key, f"{webhook_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return base64.b64encode(mac).decode("ascii")


def sign_webhook(payload: Union[bytes, str], *, webhook_id: str, timestamp: int, secret: str) -> str:
    """The `v1,<base64>` signature of a delivery (Standard Webhooks): HMAC-SHA256 of
    `id.timestamp.payload` keyed by the decoded secret. Useful to test a receiver."""
    body = payload.encode("utf-8") if isinstance(payload, str) else payload
    return "v1," + _signature(_decode_secret(secret), webhook_id, str(timestamp), body)


def verify_webhook(
    payload: Union[bytes, str],
    headers: Headers,
    secret: str,
    *,
    tolerance: int = DEFAULT_TOLERANCE,
    now: Optional[datetime] = None,
) -> Event:
    """Verifies a webhook delivery and returns its event.

    `payload` is the body exactly as received (bytes); `secret` a webhook key (`whsec_…`). Any of
    the space-separated `v1,` signatures may match (keys rotate without downtime); the timestamp
    must be within `tolerance` seconds (default 5 minutes) of `now`. Raises WebhookVerificationError.
    """
    webhook_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not webhook_id or not timestamp or not signatures:
        raise WebhookVerificationError("Missing webhook-id, webhook-timestamp or webhook-signature header")

    if not re.fullmatch(r"[0-9]+", timestamp) or int(timestamp) > 2**53 - 1:
        raise WebhookVerificationError("Invalid webhook-timestamp")
    now_seconds = int(now.timestamp()) if now is not None else int(time.time())
    if abs(now_seconds - int(timestamp)) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is outside the tolerance")

    body = payload.encode("utf-8") if isinstance(payload, str) else payload
    # The timestamp is signed as it was sent, like the TypeScript SDK does.
    expected = _signature(_decode_secret(secret), webhook_id, timestamp, body)

    matched = False
    for signature in (s.strip() for s in signatures.split(" ")):
        if not signature:
            continue
        parts = signature.split(",")
        if parts[0] == "v1" and len(parts) > 1 and hmac.compare_digest(parts[1].encode(), expected.encode()):
            matched = True
    if not matched:
        raise WebhookVerificationError("No matching signature")

    try:
        return json.loads(body)
    except ValueError:
        raise WebhookVerificationError("The body is not JSON") from None
