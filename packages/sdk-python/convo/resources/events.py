from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Dict, Generator, Iterator, List, Optional, Sequence, Union

from .._pagination import Page
from .._request_sender import RequestOptions
from ._base import Resource

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._types import Event, EventType, ListEventsQuery

#: The largest page the API gives.
_PAGE = 100


class Events(Resource):
    def list(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListEventsQuery]) -> Page[Event]:
        """The account's events of the last 30 days, newest first; filter `type`; `starting_after`/`ending_before` page from an event."""
        return self._paginate("events.list", params, options=request_options)

    def stream(
        self,
        *,
        type: Union[EventType, str, Sequence[str], None] = None,
        starting_after: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Generator[Event, None, None]:
        """The account's events as they happen, oldest first, from one open connection (Server-Sent
        Events), without end: from now, or after the event `starting_after` (catching up first).
        `type` is a type or a list of them. A dropped connection or a server restart is followed by a
        new connection that resumes after the last event (`Last-Event-ID`), so each event comes once,
        in order. Leaving the loop (or `close()`) closes the connection.

            for event in client.events.stream(type="message.received"):
                print(event["data"]["content"])
        """
        types = type if type is None or isinstance(type, str) else ",".join(type)
        return self._sender.stream("events.stream", query={"type": types, "starting_after": starting_after}, options=request_options)

    def since(self, event_id: str, *, type: Optional[EventType] = None, request_options: Optional[RequestOptions] = None) -> Iterator[Event]:
        """Every event recorded after `event_id`, oldest first, then the iteration ends: a catch-up
        after a pause. It pages with `ending_before`, so an event comes exactly once even while new
        ones arrive."""
        cursor = event_id
        while True:
            query: Dict[str, Any] = {"ending_before": cursor, "limit": _PAGE}
            if type is not None:
                query["type"] = type
            page: Dict[str, Any] = self._sender.send("events.list", query=query, options=request_options)
            oldest_first: List[Event] = list(reversed(page["data"]))
            yield from oldest_first
            if oldest_first:
                cursor = oldest_first[-1]["id"]
            if not page["has_more"]:
                return

    def follow(
        self,
        *,
        after: Optional[str] = None,
        type: Optional[EventType] = None,
        interval: float = 2.0,
        stop: Optional[threading.Event] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Iterator[Event]:
        """The events as they are recorded, oldest first, without end (until `stop` is set): catches
        up from `after` (or from the newest event now), then looks again every `interval` seconds."""
        stopped = stop or threading.Event()
        cursor = after if after is not None else self._newest(request_options)
        while not stopped.is_set():
            found = False
            if cursor is None:
                # An empty log: its first event, once there is one, starts the cursor.
                oldest = self._oldest(request_options)
                if oldest is not None:
                    found = True
                    cursor = oldest["id"]
                    if type is None or oldest["type"] == type:
                        yield oldest
            else:
                # The cursor moves over events of every type, so that `type` never holds it back.
                for event in self.since(cursor, request_options=request_options):
                    found = True
                    cursor = event["id"]
                    if type is None or event["type"] == type:
                        yield event
                    if stopped.is_set():
                        return
            if not found:
                stopped.wait(interval)

    def _newest(self, options: Optional[RequestOptions]) -> Optional[str]:
        data: List[Event] = self._sender.send("events.list", query={"limit": 1}, options=options)["data"]
        return data[0]["id"] if data else None

    def _oldest(self, options: Optional[RequestOptions]) -> Optional[Event]:
        total: int = self._sender.send("events.list", query={"limit": 1}, options=options)["total"]
        if total == 0:
            return None
        data: List[Event] = self._sender.send("events.list", query={"limit": 1, "offset": total - 1}, options=options)["data"]
        return data[0] if data else None
