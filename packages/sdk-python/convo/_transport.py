"""How a request reaches the server: a small interface, and its urllib implementation."""

from __future__ import annotations

import builtins
import http.client
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Dict, Iterable, Mapping, Optional, Protocol, Tuple

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
        except urllib.error.URLError as error:
            if isinstance(error.reason, _TIMEOUTS):
                raise TimeoutError(f"No response within {timeout} s: {method} {url}", code="timeout") from error
            raise ConnectionError(f"Could not reach {url}: {error.reason}", code="connection_error") from error
        except _TIMEOUTS as error:
            raise TimeoutError(f"No response within {timeout} s: {method} {url}", code="timeout") from error
        except (OSError, http.client.HTTPException) as error:  # reset, refused, closed early, malformed
            raise ConnectionError(f"Could not reach {url}: {error!r}", code="connection_error") from error

    def close(self) -> None:
        """Nothing to release: urllib opens a connection per request."""


def _lower(items: Iterable[Tuple[str, str]]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for name, value in items:
        key = name.lower()
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out
