"""What the tests share: a fake transport that records requests, and the end-to-end settings."""

from __future__ import annotations

import json
import os
import unittest
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

import convo
from convo import HttpResponse, StreamedResponse

PACKAGE_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = PACKAGE_DIR.parent.parent
CI = os.environ.get("CI", "").lower() in ("1", "true")


@dataclass
class RecordedRequest:
    method: str
    url: str
    headers: Dict[str, str]
    body: Optional[bytes]
    timeout: float

    @property
    def path(self) -> str:
        return urllib.parse.urlsplit(self.url).path

    @property
    def query(self) -> Dict[str, str]:
        return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.url).query, keep_blank_values=True))

    def json(self) -> Any:
        return None if self.body is None else json.loads(self.body)


Reply = Union[HttpResponse, Exception, Callable[[RecordedRequest], HttpResponse]]


class FakeTransport:
    """Answers each request with the next reply (a response, an exception to raise, or a function)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies: List[Reply] = list(replies)
        self.requests: List[RecordedRequest] = []

    def request(self, method: str, url: str, headers: Mapping[str, str], body: Optional[bytes], timeout: float) -> HttpResponse:
        recorded = RecordedRequest(method, url, dict(headers), body, timeout)
        self.requests.append(recorded)
        if not self.replies:
            raise AssertionError(f"unexpected request: {method} {url}")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(recorded)
        return reply

    def stream(self, method: str, url: str, headers: Mapping[str, str], timeout: float) -> StreamedResponse:
        """The next reply, its body as one chunk after which the stream ends."""
        response = self.request(method, url, headers, None, timeout)
        return StreamedResponse(response.status, response.headers, [response.body] if response.body else [])


def respond(status: int = 200, body: Any = None, headers: Optional[Mapping[str, str]] = None) -> HttpResponse:
    payload = b"" if body is None else json.dumps(body).encode()
    return HttpResponse(status, {"content-type": "application/json", "x-request-id": "req_test", **(headers or {})}, payload)


def error(status: int, code: str, message: str = "nope", details: Any = None, headers: Optional[Mapping[str, str]] = None) -> HttpResponse:
    inner: Dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        inner["details"] = details
    return respond(status, {"error": inner}, headers)


def page(data: List[Any], *, total: int, offset: int = 0, limit: int = 20) -> HttpResponse:
    return respond(200, {"data": data, "total": total, "limit": limit, "offset": offset, "has_more": offset + len(data) < total})


def fake_client(*replies: Reply, **kwargs: Any) -> "tuple[convo.Client, FakeTransport, List[float]]":
    """A client on a FakeTransport whose waits are recorded instead of slept."""
    transport = FakeTransport(*replies)
    sleeps: List[float] = []
    kwargs.setdefault("jitter", lambda: 0.5)
    client = convo.Client(api_key="convo_sk_test", base_url="https://api.example.com/v1", transport=transport, sleep=sleeps.append, **kwargs)
    return client, transport, sleeps


def e2e_settings() -> Dict[str, str]:
    """The server the test run started (scripts/run-tests.mjs); skips without one, fails under CI=true."""
    if os.environ.get("CONVO_E2E") != "1" or not os.environ.get("CONVO_BASE_URL"):
        message = "no Convo server: run through `pnpm --filter @convo/sdk-python test` (scripts/run-tests.mjs)"
        if CI:
            raise AssertionError(message + " (CI=true: the end-to-end tests must run)")
        raise unittest.SkipTest(message)
    return {
        "base_url": os.environ["CONVO_BASE_URL"],
        "api_key": os.environ["CONVO_API_KEY"],
        "read_only_key": os.environ["CONVO_TEST_READ_ONLY_KEY"],
        "webhook_secret": os.environ["CONVO_TEST_WEBHOOK_SECRET"],
        "limited_key": os.environ["CONVO_TEST_LIMITED_KEY"],
    }


def load_openapi() -> Optional[Dict[str, Any]]:
    """The OpenAPI document the built server serves (`convo-server openapi`), or None without a build."""
    import subprocess

    bin_js = REPO_ROOT / "apps" / "api" / "dist" / "bin.js"
    if not bin_js.exists():
        return None
    out = subprocess.run(["node", str(bin_js), "openapi"], check=True, capture_output=True, text=True, cwd=REPO_ROOT).stdout
    return json.loads(out)


def require_openapi() -> Dict[str, Any]:
    document = load_openapi()
    if document is None:
        if CI:
            raise AssertionError("apps/api/dist/bin.js is missing (CI=true): build @convo/api")
        raise unittest.SkipTest("apps/api is not built")
    return document
