"""Server-Sent Events as the WHATWG HTML standard parses them ("Interpreting an event stream"):
bytes in, as they arrive; events out, once their blank line has come."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional

_LINE_END = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True)
class ServerSentEvent:
    event: str
    """The `event:` field, `message` when the event has none."""
    data: str
    """The `data:` lines joined with newlines."""
    last_event_id: str
    """The last `id:` the stream has set by this event (it carries over to events without one)."""


class EventStreamParser:
    """Splits the stream into lines on CRLF, LF or CR, wherever the chunks happen to end, and
    dispatches an event at each blank line. Comments (`:`) and unknown fields are skipped."""

    def __init__(self, last_event_id: str = "") -> None:
        self.last_event_id = last_event_id
        """Survives reconnections, as the standard keeps it on the EventSource: it is what `Last-Event-ID` sends."""
        self.retry: Optional[float] = None
        """The reconnection time the stream last set (`retry:`, milliseconds on the wire), in seconds."""
        self._id_buffer = last_event_id
        self._data: List[str] = []
        self._event = ""
        self._partial = b""
        self._first_line = True
        self._after_cr = False

    def feed(self, chunk: bytes) -> List[ServerSentEvent]:
        """The events that `chunk` completes, in order."""
        buffer = self._partial + chunk
        if self._after_cr and buffer.startswith(b"\n"):
            buffer = buffer[1:]  # the LF of a CRLF whose CR ended the previous chunk
        self._after_cr = False
        events: List[ServerSentEvent] = []
        start = 0
        for end in _LINE_END.finditer(buffer):
            event = self._line(buffer[start : end.start()])
            if event is not None:
                events.append(event)
            start = end.end()
            self._after_cr = end.group() == b"\r" and start == len(buffer)
        self._partial = buffer[start:]
        return events

    def _line(self, raw: bytes) -> Optional[ServerSentEvent]:
        # CR and LF never occur inside a UTF-8 sequence, so each line decodes on its own.
        line = raw.decode("utf-8", errors="replace")
        if self._first_line:
            self._first_line = False
            line = line[1:] if line.startswith("\ufeff") else line  # the stream's one optional byte-order mark
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id" and "\0" not in value:
            self._id_buffer = value
        elif field == "retry" and value.isascii() and value.isdigit():
            self.retry = int(value) / 1000
        return None

    def _dispatch(self) -> Optional[ServerSentEvent]:
        self.last_event_id = self._id_buffer
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            # A block without data moves the last event id (a server may use that to advance the cursor) and nothing else.
            return None
        return ServerSentEvent(event or "message", "\n".join(data), self.last_event_id)
