from __future__ import annotations

import os
import random
import time
from types import TracebackType
from typing import Callable, Optional, Type

from ._request_sender import RequestSender, RetryEvent
from ._transport import Transport, UrllibTransport
from .resources import Channels, Contacts, Conversations, Events, Files, Messages, Orders, Sandbox, Tags, WebhookEndpoints, Workflows

DEFAULT_BASE_URL = "http://127.0.0.1:3000/v1"


class Client:
    """The Convo API client.

        with convo.Client() as client:  # CONVO_API_KEY, CONVO_BASE_URL
            for conversation in client.conversations.list(status="active"):
                print(conversation["id"])
    """

    conversations: Conversations
    messages: Messages
    files: Files
    contacts: Contacts
    tags: Tags
    orders: Orders
    workflows: Workflows
    events: Events
    webhook_endpoints: WebhookEndpoints
    channels: Channels
    sandbox: Sandbox

    def __init__(
        self,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        *,
        transport: Optional[Transport] = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        on_retry: Optional[Callable[[RetryEvent], None]] = None,
    ) -> None:
        """`api_key` defaults to CONVO_API_KEY; `base_url` (ending in /v1) to CONVO_BASE_URL, else
        http://127.0.0.1:3000/v1. `timeout` is in seconds per attempt; `max_retries` counts the
        retries after a network error, a 429 or a 5xx. `transport` replaces urllib (tests).
        `sleep(seconds)` waits between two attempts of a request (default `time.sleep`); `jitter()`
        returns a number in [0, 1) that places each wait between half and all of its backoff
        (default `random.random`). `on_retry(event)` is told of each retry before its wait (a
        `convo.RetryEvent`: the error, the attempt to come, the most attempts, the delay in seconds)."""
        from . import __version__

        api_key = api_key or os.environ.get("CONVO_API_KEY") or None
        if not api_key:
            raise TypeError("convo.Client needs an API key: pass api_key=... or set CONVO_API_KEY")
        self._transport = transport if transport is not None else UrllibTransport()
        self._sender = RequestSender(
            api_key=api_key,
            base_url=base_url or os.environ.get("CONVO_BASE_URL") or DEFAULT_BASE_URL,
            timeout=timeout,
            max_retries=max_retries,
            transport=self._transport,
            user_agent=f"convo-python/{__version__}",
            sleep=sleep,
            jitter=jitter,
            on_retry=on_retry,
        )
        self.conversations = Conversations(self._sender)
        self.messages = Messages(self._sender)
        self.files = Files(self._sender)
        self.contacts = Contacts(self._sender)
        self.tags = Tags(self._sender)
        self.orders = Orders(self._sender)
        self.workflows = Workflows(self._sender)
        self.events = Events(self._sender)
        self.webhook_endpoints = WebhookEndpoints(self._sender)
        self.channels = Channels(self._sender)
        self.sandbox = Sandbox(self._sender)

    @property
    def base_url(self) -> str:
        return self._sender.base_url

    def close(self) -> None:
        """Releases the transport's connections, where it keeps any."""
        close = getattr(self._transport, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()
