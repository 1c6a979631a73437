"""The Python client of the Convo /v1 API (standard library only).

    import convo

    with convo.Client() as client:  # reads CONVO_API_KEY and CONVO_BASE_URL
        for conversation in client.conversations.list(status="active"):
            print(conversation["id"], conversation["contact"]["name"])
"""

__version__ = "0.1.0"

from ._client import DEFAULT_BASE_URL, Client
from ._errors import (
    BadRequestError,
    ConnectionError,
    ConvoError,
    ForbiddenError,
    NotFoundError,
    RateLimitedError,
    ServerError,
    TimeoutError,
    UnauthorizedError,
)
from ._operations import SDK_METHODS
from ._pagination import Page
from ._request_sender import RequestOptions, RetryEvent
from ._transport import HttpResponse, StreamedResponse, StreamingTransport, Transport, UrllibTransport
from ._webhooks import WebhookVerificationError, sign_webhook, verify_webhook

__all__ = [
    "DEFAULT_BASE_URL",
    "SDK_METHODS",
    "BadRequestError",
    "Client",
    "ConnectionError",
    "ConvoError",
    "ForbiddenError",
    "HttpResponse",
    "NotFoundError",
    "Page",
    "RateLimitedError",
    "RequestOptions",
    "RetryEvent",
    "ServerError",
    "StreamedResponse",
    "StreamingTransport",
    "TimeoutError",
    "Transport",
    "UnauthorizedError",
    "UrllibTransport",
    "WebhookVerificationError",
    "__version__",
    "sign_webhook",
    "verify_webhook",
]
