"""The one request sender: it builds an operation's request from the route table and owns
timeouts, retries with exponential backoff and jitter (network errors, 429, 5xx; never another
4xx) and idempotency keys (every POST carries one, the same on each of its retries); and it
follows a stream of events, reconnecting where the last one left off."""

from __future__ import annotations

import json
import mimetypes
import os
import random
import time
import urllib.parse
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generator, Mapping, Optional, Tuple, TypedDict, Union, cast

from ._errors import ConnectionError, ConvoError, RateLimitedError, ServerError, TimeoutError, error_from_response
from ._routes import ROUTES, Route
from ._sse import EventStreamParser
from ._transport import StreamedResponse, StreamingTransport, Transport

RETRY_BASE = 0.5
RETRY_MAX = 8.0
RETRY_AFTER_MAX = 60.0
"""A Retry-After longer than this (seconds) is not waited out: the error goes to the caller."""
STREAM_SILENCE = 30.0
"""Seconds without a byte after which a stream's connection counts as dead: the server writes at least every 15 s."""


@dataclass(frozen=True)
class RetryEvent:
    """A retry about to be made (`Client(on_retry=...)`): why, which attempt, and how long the client waits first."""

    error: ConvoError
    """What the failed attempt raised: a RateLimitedError for a 429, a ServerError, ConnectionError or TimeoutError."""
    attempt: int
    """The attempt about to be made: 2 for the first retry."""
    max_attempts: Optional[int]
    """The most attempts this request makes: max_retries + 1; None for a stream that has opened,
    which reconnects for as long as it is read."""
    delay: float
    """Seconds the client waits before that attempt (Retry-After on a 429)."""
    method: str
    path: str
    """The operation's method and path, e.g. `POST` and `/v1/contacts`."""


class RequestOptions(TypedDict, total=False):
    """Per call: `client.contacts.create(..., request_options={"idempotency_key": "order-1001"})`."""

    idempotency_key: str
    """Sent as `Idempotency-Key` on a POST; by default each POST gets a new random key, kept across its retries."""
    timeout: float
    """Seconds per attempt."""
    max_retries: int


class RequestSender:
    def __init__(
        self,
        *,
        api_key: str,
        base_url: str,
        timeout: float,
        max_retries: int,
        transport: Transport,
        user_agent: str = "convo-python",
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        on_retry: Optional[Callable[[RetryEvent], None]] = None,
    ) -> None:
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.transport = transport
        self.user_agent = user_agent
        self.sleep = sleep
        self.jitter = jitter
        self.on_retry = on_retry

    def send(
        self,
        operation_id: str,
        *,
        path: Optional[Mapping[str, str]] = None,
        query: Optional[Mapping[str, Any]] = None,
        body: Optional[Mapping[str, Any]] = None,
        options: Optional[RequestOptions] = None,
    ) -> Any:
        """Sends an operation of the route table; returns the parsed JSON body (None for a 204)."""
        route = ROUTES[operation_id]
        options = options or {}
        url = self.url(route, path, query)
        headers = self.headers("application/json")
        data: Optional[bytes] = None
        if route.download:
            headers["Accept"] = "*/*"
        if route.upload:
            headers["Content-Type"], data = encode_multipart(route.upload, body or {})
        elif route.method in ("POST", "PATCH"):
            headers["Content-Type"] = "application/json"
            data = json.dumps(dict(body or {}), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if route.method == "POST":
            headers["Idempotency-Key"] = options.get("idempotency_key") or str(uuid.uuid4())

        timeout = options.get("timeout", self.timeout)
        max_retries = options.get("max_retries", self.max_retries)
        attempt = 0
        while True:
            try:
                response = self.transport.request(route.method, url, headers, data, timeout)
                if 200 <= response.status < 300 and route.download:
                    return response.body
                if 200 <= response.status < 300:
                    return json.loads(response.body) if response.status != 204 and response.body else None
                error = error_from_response(response.status, parse_json(response.body), response.headers)
            except (ConnectionError, TimeoutError) as caught:
                error = caught
            delay = self.retry_delay(error, attempt)
            if attempt >= max_retries or delay is None:
                raise error
            self.wait(RetryEvent(error, attempt + 2, max_retries + 1, delay, route.method, urllib.parse.urlsplit(url).path))
            attempt += 1

    def stream(
        self,
        operation_id: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        options: Optional[RequestOptions] = None,
    ) -> Generator[Any, None, None]:
        """Follows an operation that answers Server-Sent Events, yielding each event's data parsed as JSON.

        The first connection is retried like any request (`max_retries`). Once the stream has opened,
        a broken connection, a 5xx, a 429 or the stream's end is followed by a new connection, with
        backoff (at least the server's `retry:`; a 429's Retry-After), for as long as the generator is
        read; it sends `Last-Event-ID` (the last id the stream set), so each event comes once and in
        order. Another 4xx raises. Closing the generator closes the connection."""
        route = ROUTES[operation_id]
        transport = self.transport
        if not isinstance(transport, StreamingTransport):
            raise TypeError(f"{type(transport).__name__} has no stream() method: {operation_id} needs a StreamingTransport")
        options = options or {}
        url = self.url(route, None, query)
        headers = self.headers("text/event-stream")
        headers["Cache-Control"] = "no-cache"
        # A stream is silent between events: the timeout bounds that silence, never shorter than the
        # server's keep-alive comments allow.
        timeout = max(options.get("timeout", self.timeout), STREAM_SILENCE)
        max_retries = options.get("max_retries", self.max_retries)
        last_event_id = ""
        server_retry = 0.0
        opened = False
        # Failed connections since the last event: the backoff grows with them.
        failures = 0
        while True:
            if last_event_id:
                headers["Last-Event-ID"] = last_event_id
            response: Optional[StreamedResponse] = None
            try:
                response = transport.stream(route.method, url, headers, timeout)
                if not 200 <= response.status < 300:
                    error: ConvoError = error_from_response(response.status, parse_json(b"".join(response.chunks)), response.headers)
                elif not response.headers.get("content-type", "").startswith("text/event-stream"):
                    # Reconnecting would not help: the address answers, but not with events.
                    raise ServerError(
                        f"{url} answered {response.headers.get('content-type') or 'no content type'}, not an event stream: is the base URL right?",
                        code="server_error",
                        status=response.status,
                        request_id=response.headers.get("x-request-id"),
                    )
                else:
                    opened = True
                    parser = EventStreamParser(last_event_id)
                    for chunk in response.chunks:
                        for event in parser.feed(chunk):
                            failures = 0
                            yield parse_event_data(event.data, url)
                        last_event_id = parser.last_event_id
                        server_retry = parser.retry if parser.retry is not None else server_retry
                    error = ConnectionError(f"The server ended the stream: {url}", code="connection_error")
            except (ConnectionError, TimeoutError) as caught:
                error = caught
            finally:
                if response is not None:
                    response.close()
            delay = self.retry_delay(error, failures)
            if delay is None or (not opened and failures >= max_retries):
                raise error
            if not isinstance(error, RateLimitedError):
                delay = max(delay, server_retry)  # the server's `retry:` is the least it asks for
            failures += 1
            self.wait(RetryEvent(error, failures + 1, None if opened else max_retries + 1, delay, route.method, urllib.parse.urlsplit(url).path))

    def url(self, route: Route, path: Optional[Mapping[str, str]], query: Optional[Mapping[str, Any]]) -> str:
        url = self.base_url + fill_path(route.path, path or {})
        query_string = encode_query(query or {})
        return url + "?" + query_string if query_string else url

    def headers(self, accept: str) -> Dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}", "Accept": accept, "User-Agent": self.user_agent}

    def wait(self, event: RetryEvent) -> None:
        """Tells `on_retry` of the retry to come, then waits its delay."""
        if self.on_retry is not None:
            self.on_retry(event)
        self.sleep(event.delay)

    def retry_delay(self, error: ConvoError, attempt: int) -> Optional[float]:
        """Seconds to wait before retrying after `error`, or None when it must not be retried."""
        backoff = min(RETRY_MAX, RETRY_BASE * 2**attempt)
        jittered = backoff / 2 + self.jitter() * (backoff / 2)
        if isinstance(error, RateLimitedError):
            if error.retry_after is None:
                return jittered
            return None if error.retry_after > RETRY_AFTER_MAX else error.retry_after
        if isinstance(error, (ServerError, ConnectionError, TimeoutError)):
            return jittered
        return None


def fill_path(template: str, params: Mapping[str, str]) -> str:
    """`/contacts/{id}` with {"id": "ct_1"} → `/contacts/ct_1`, each value URL-encoded as encodeURIComponent does."""
    out = template
    for name in _path_names(template):
        if name not in params:
            raise TypeError(f'Missing path parameter "{name}"')
        out = out.replace("{" + name + "}", urllib.parse.quote(str(params[name]), safe="!~*'()"))
    return out


def _path_names(template: str) -> list[str]:
    names: list[str] = []
    rest = template
    while "{" in rest:
        start = rest.index("{")
        end = rest.index("}", start)
        names.append(rest[start + 1 : end])
        rest = rest[end + 1 :]
    return names


def encode_query(query: Mapping[str, Any]) -> str:
    """Skips None; booleans as `true`/`false` (as the wire and the TypeScript SDK write them)."""
    pairs = [(name, ("true" if value else "false") if isinstance(value, bool) else str(value)) for name, value in query.items() if value is not None]
    return urllib.parse.urlencode(pairs)


def encode_multipart(part: str, upload: Mapping[str, Any]) -> Tuple[str, bytes]:
    """An upload's body as `multipart/form-data` with one part, read whole: (its Content-Type, its bytes).
    `upload` holds `file` (a path, bytes, or a binary file object) and optionally `filename` and `mime_type`."""
    file = upload["file"]
    if isinstance(file, (str, os.PathLike)):
        path: str = os.fspath(cast("Union[str, os.PathLike[str]]", file))
        with open(path, "rb") as opened:
            content = opened.read()
        file = opened
    else:
        content = file if isinstance(file, (bytes, bytearray)) else file.read()
    filename = upload.get("filename") or os.path.basename(str(getattr(file, "name", "") or "")) or "file"
    mime_type = upload.get("mime_type") or mimetypes.guess_type(filename)[0] or "application/octet-stream"
    boundary = "convo-" + uuid.uuid4().hex
    quoted = filename.replace("\\", "\\\\").replace('"', '\\"').replace("\r", " ").replace("\n", " ")
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="{part}"; filename="{quoted}"\r\n'
        f"Content-Type: {mime_type}\r\n\r\n"
    ).encode("utf-8")
    return f"multipart/form-data; boundary={boundary}", head + bytes(content) + f"\r\n--{boundary}--\r\n".encode("ascii")


def parse_event_data(data: str, url: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as error:
        raise ServerError(f"The event stream of {url} sent data that is not JSON: {data[:80]}", code="server_error") from error


def parse_json(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None
