"""How a request reaches the server: a small interface, and its urllib implementation."""

from __future__ import annotations

import builtins
import http.client
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, Iterator, Mapping, NoReturn, Optional, Protocol, Tuple, runtime_checkable

from ._errors import ConnectionError, TimeoutError


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str] = field(default_factory=lambda: {})
    """Header names in lower case."""
    body: bytes = b""


class Transport(Protocol):
    """Sends one HTTP request and returns its response, whatever its status. Raises
    `convo.ConnectionError` when no response arrives and `convo.TimeoutError` after `timeout` seconds."""

    def request(self, method: str, url: str, headers: Mapping[str, str], body: Optional[bytes], timeout: float) -> HttpResponse: ...


class StreamedResponse:
    """A response whose body is read as it arrives (`StreamingTransport.stream`): `chunks` yields its
    bytes until the body ends, raising `convo.ConnectionError` or `convo.TimeoutError` if the
    connection breaks or stays silent for the timeout; `close()` releases the connection."""

    def __init__(self, status: int, headers: Mapping[str, str], chunks: Iterable[bytes], close: Callable[[], None] = lambda: None) -> None:
        self.status = status
        self.headers = headers
        """Header names in lower case."""
        self.chunks = chunks
        self.close = close


@runtime_checkable
class StreamingTransport(Protocol):
    """A transport that can also follow a response that stays open (Server-Sent Events). `timeout`
    bounds the wait for the response and then for each piece of its body."""

    def stream(self, method: str, url: str, headers: Mapping[str, str], timeout: float) -> StreamedResponse: ...


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is answered to the caller, not followed (the API never redirects)."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_TIMEOUTS = (socket.timeout, builtins.TimeoutError)


class UrllibTransport:
    """The default transport: `urllib.request` (which honours the usual proxy environment variables)."""

    def __init__(self) -> None:
        self._opener = urllib.request.build_opener(_NoRedirect)

    def request(self, method: str, url: str, headers: Mapping[str, str], body: Optional[bytes], timeout: float) -> HttpResponse:
        request = urllib.request.Request(url, data=body, headers=dict(headers), method=method)
        try:
            with self._opener.open(request, timeout=timeout) as response:
                return HttpResponse(response.status, _lower(response.headers.items()), response.read())
        except urllib.error.HTTPError as error:
            with error:
                return HttpResponse(error.code, _lower(error.headers.items()), error.read())
        except (OSError, http.client.HTTPException) as error:
            _raise_unreached(error, method, url, timeout)

    def stream(self, method: str, url: str, headers: Mapping[str, str], timeout: float) -> StreamedResponse:
        request = urllib.request.Request(url, headers=dict(headers), method=method)
        try:
            response = self._opener.open(request, timeout=timeout)
        except urllib.error.HTTPError as error:
            # An error's body is a small JSON document: read whole.
            with error:
                return StreamedResponse(error.code, _lower(error.headers.items()), [error.read()])
        except (OSError, http.client.HTTPException) as error:
            _raise_unreached(error, method, url, timeout)
        return StreamedResponse(response.status, _lower(response.headers.items()), _body_chunks(response, url, timeout), response.close)

    def close(self) -> None:
        """Nothing to release: urllib opens a connection per request."""


def _body_chunks(response: http.client.HTTPResponse, url: str, timeout: float) -> Iterator[bytes]:
    """The body as it arrives: `read1` returns what has come (at least a byte) without waiting for more."""
    while True:
        try:
            chunk = response.read1(65536)
        except _TIMEOUTS as error:
            raise TimeoutError(f"Nothing received for {timeout} s: {url}", code="timeout") from error
        except (OSError, http.client.HTTPException, ValueError) as error:  # reset, cut short, or closed meanwhile
            raise ConnectionError(f"The connection to {url} broke: {error!r}", code="connection_error") from error
        if not chunk:
            return
        yield chunk


def _raise_unreached(error: BaseException, method: str, url: str, timeout: float) -> NoReturn:
    """No response came: a TimeoutError after `timeout`, else a ConnectionError (refused, reset, closed early, malformed)."""
    reason = error.reason if isinstance(error, urllib.error.URLError) else error
    if isinstance(reason, _TIMEOUTS):
        raise TimeoutError(f"No response within {timeout} s: {method} {url}", code="timeout") from error
    detail = reason if isinstance(error, urllib.error.URLError) else repr(error)
    raise ConnectionError(f"Could not reach {url}: {detail}", code="connection_error") from error


def _lower(items: Iterable[Tuple[str, str]]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for name, value in items:
        key = name.lower()
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out
