"""`client.events.stream()`: the Server-Sent Events parser, and the generator against a small SSE
server on a thread that drops connections, restarts, fails and rate-limits on cue."""

from __future__ import annotations

import http.server
import json
import queue
import socket
import threading
import unittest
from typing import Any, Callable, Dict, List, Optional, cast

import convo
from convo import HttpResponse, StreamedResponse
from convo._sse import EventStreamParser, ServerSentEvent

from .support import FakeTransport, RecordedRequest, error

#: How long a test waits for something the server or the client should do at once.
PROMPTLY = 10.0


def event(number: int, type: str = "message.received") -> Dict[str, Any]:
    return {"id": f"evt_{number}", "type": type, "created_at": "2026-11-22T10:15:30.123Z", "data": {"id": f"msg_{number}", "content": f"Oi {number}"}}


def frame(body: Dict[str, Any]) -> bytes:
    return f"id: {body['id']}\nevent: {body['type']}\ndata: {json.dumps(body)}\n\n".encode()


class Parsing(unittest.TestCase):
    def parse(self, *chunks: bytes, last_event_id: str = "") -> List[ServerSentEvent]:
        parser = EventStreamParser(last_event_id)
        return [e for chunk in chunks for e in parser.feed(chunk)]

    def test_fields_comments_and_the_default_type(self) -> None:
        stream = b": opened\n\nid: evt_1\nevent: message.received\ndata: {\"a\": 1}\n\n: keep-alive\n\ndata: plain\n\n"
        self.assertEqual(self.parse(stream), [ServerSentEvent("message.received", '{"a": 1}', "evt_1"), ServerSentEvent("message", "plain", "evt_1")])

    def test_multi_line_data_is_joined_with_newlines(self) -> None:
        self.assertEqual(self.parse(b"data: {\ndata:   \"a\": 1\ndata\ndata: }\n\n")[0].data, '{\n  "a": 1\n\n}')

    def test_crlf_cr_and_lf_end_lines_wherever_the_chunks_split(self) -> None:
        stream = b"id: 1\r\ndata: a\r\n\r\nid: 2\rdata: b\r\rid: 3\ndata: c\n\n"
        expected = [ServerSentEvent("message", "a", "1"), ServerSentEvent("message", "b", "2"), ServerSentEvent("message", "c", "3")]
        self.assertEqual(self.parse(stream), expected)
        self.assertEqual(self.parse(*[stream[i : i + 1] for i in range(len(stream))]), expected, "fed a byte at a time")
        for cut in range(len(stream)):
            self.assertEqual(self.parse(stream[:cut], stream[cut:]), expected, f"split at {cut}")

    def test_utf8_split_inside_a_character_and_a_leading_byte_order_mark(self) -> None:
        stream = "\ufeffdata: Olá 👋\n\n".encode()
        self.assertEqual([e.data for e in self.parse(*[stream[i : i + 1] for i in range(len(stream))])], ["Olá 👋"])

    def test_only_one_space_after_the_colon_is_dropped_and_unknown_fields_are_skipped(self) -> None:
        self.assertEqual(self.parse(b"data:  two\nretry: 10\nfoo: bar\ndata:none\n\n")[0].data, " two\nnone")

    def test_the_id_carries_over_resets_when_empty_and_ignores_nul(self) -> None:
        events = self.parse(b"data: a\n\nid: 7\ndata: b\n\ndata: c\n\nid: x\x00y\ndata: d\n\nid\ndata: e\n\n", last_event_id="6")
        self.assertEqual([e.last_event_id for e in events], ["6", "7", "7", "7", ""])

    def test_a_block_without_data_moves_the_id_and_dispatches_nothing(self) -> None:
        parser = EventStreamParser()
        self.assertEqual(parser.feed(b"id: evt_9\nevent: ping\n\n"), [])
        self.assertEqual(parser.last_event_id, "evt_9")
        self.assertEqual(parser.feed(b"data: x\n\n"), [ServerSentEvent("message", "x", "evt_9")])

    def test_retry_sets_the_reconnection_time_when_it_is_digits(self) -> None:
        parser = EventStreamParser()
        parser.feed(b"retry: 2500\n\nretry: soon\n\n")
        self.assertEqual(parser.retry, 2.5)

    def test_an_event_without_its_blank_line_is_not_dispatched(self) -> None:
        parser = EventStreamParser()
        self.assertEqual(parser.feed(b"id: evt_1\ndata: a\n\nid: evt_2\ndata: b\n"), [ServerSentEvent("message", "a", "evt_1")])
        self.assertEqual(parser.last_event_id, "evt_1", "the unfinished event's id is not the last one")


class Connection(http.server.BaseHTTPRequestHandler):
    """Plays the next script of its server on each request."""

    protocol_version = "HTTP/1.1"

    @property
    def sse(self) -> "SSEServer":
        return cast("SSEServer", self.server)

    def do_GET(self) -> None:
        self.sse.requests.put(RecordedRequest("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, None, 0))
        if not self.sse.scripts:
            self.fail(400, "bad_request", "no script left for this connection")
            return
        self.sse.scripts.pop(0)(self)

    def open_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.write(b": stream opened\n\n")

    def write(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end(self) -> None:
        """Ends the body cleanly: the stream is over."""
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def drop(self) -> None:
        """Cuts the connection in the middle of the body, as a crash does."""
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def hold(self) -> None:
        """Keeps the stream open until the client closes it."""
        self.connection.settimeout(PROMPTLY)
        try:
            while self.rfile.read(1):
                pass
        except OSError:
            return
        self.sse.closed.set()

    def fail(self, status: int, code: str, message: str = "nope", headers: Optional[Dict[str, str]] = None) -> None:
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Request-Id", "req_stream")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


Script = Callable[[Connection], None]


class SSEServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, scripts: List[Script], port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), Connection)
        self.scripts = scripts
        self.requests: "queue.Queue[RecordedRequest]" = queue.Queue()
        self.closed = threading.Event()
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def received(self) -> List[RecordedRequest]:
        out: List[RecordedRequest] = []
        while not self.requests.empty():
            out.append(self.requests.get_nowait())
        return out


def sends(*numbers: int) -> Script:
    """Opens the stream, sends these events, then holds it open until the client leaves."""

    def script(c: Connection) -> None:
        c.open_stream()
        for number in numbers:
            c.write(frame(event(number)))
        c.hold()

    return script


class Streaming(unittest.TestCase):
    def setUp(self) -> None:
        self.servers: List[SSEServer] = []
        self.sleeps: List[float] = []
        self.retries: List[convo.RetryEvent] = []

    def tearDown(self) -> None:
        for server in self.servers:
            server.stop()

    def serve(self, *scripts: Script, port: int = 0) -> SSEServer:
        server = SSEServer(list(scripts), port)
        self.servers.append(server)
        return server

    def client(self, server: SSEServer, sleep: Optional[Callable[[float], None]] = None, **kwargs: Any) -> convo.Client:
        """Its waits between connections are recorded (and may act), never slept."""
        return convo.Client(
            api_key="convo_sk_test",
            base_url=f"http://127.0.0.1:{server.port}/v1",
            sleep=sleep or self.sleeps.append,
            jitter=lambda: 0.5,
            on_retry=self.retries.append,
            **kwargs,
        )

    def take(self, stream: Any, count: int) -> List[Dict[str, Any]]:
        return [next(stream) for _ in range(count)]

    def test_the_request_and_the_events_as_dicts(self) -> None:
        server = self.serve(sends(1, 2))
        stream = self.client(server).events.stream(type=["message.received", "order.placed"], starting_after="evt_0")
        self.assertEqual(self.take(stream, 2), [event(1), event(2)])
        stream.close()
        (request,) = server.received()
        self.assertEqual(request.path, "/v1/events/stream")
        self.assertEqual(request.query, {"type": "message.received,order.placed", "starting_after": "evt_0"})
        self.assertEqual(request.headers["accept"], "text/event-stream")
        self.assertEqual(request.headers["authorization"], "Bearer convo_sk_test")
        self.assertNotIn("last-event-id", request.headers)

    def test_one_type_goes_as_it_is_and_nothing_is_sent_before_the_first_event_is_asked_for(self) -> None:
        server = self.serve(sends(1))
        stream = self.client(server).events.stream(type="message.received")
        self.assertTrue(server.requests.empty())
        next(stream)
        stream.close()
        self.assertEqual(server.received()[0].query, {"type": "message.received"})

    def test_multi_line_data_and_crlf_from_the_wire(self) -> None:
        body = event(1)

        def script(c: Connection) -> None:
            c.open_stream()
            pretty = json.dumps(body, indent=2).replace("\n", "\r\ndata: ")
            wire = f"id: evt_1\r\nevent: message.received\r\ndata: {pretty}\r\n\r\n".encode()
            for index in range(0, len(wire), 7):  # in pieces that split lines and CRLFs
                c.write(wire[index : index + 7])
            c.hold()

        stream = self.client(self.serve(script)).events.stream()
        self.assertEqual(next(stream), body)
        stream.close()

    def test_closing_the_generator_closes_the_connection(self) -> None:
        server = self.serve(sends(1))
        stream = self.client(server).events.stream()
        next(stream)
        self.assertFalse(server.closed.is_set())
        stream.close()
        self.assertTrue(server.closed.wait(PROMPTLY), "the server saw the connection close")

    def test_leaving_the_loop_closes_the_connection(self) -> None:
        server = self.serve(sends(1, 2, 3))
        for seen in self.client(server).events.stream():
            if seen["id"] == "evt_2":
                break
        self.assertTrue(server.closed.wait(PROMPTLY))

    def test_drops_ends_and_5xx_resume_after_the_last_event_each_once_in_order(self) -> None:
        def dropped_mid_event(c: Connection) -> None:
            c.open_stream()
            c.write(frame(event(1)) + frame(event(2)))
            c.write(b"id: evt_3\ndata: {\"id\": \"evt_3\", ")  # never finished: not an event
            c.drop()

        def ended(c: Connection) -> None:
            c.open_stream()
            c.write(frame(event(3)) + frame(event(4)) + frame(event(5)))
            c.end()

        server = self.serve(
            dropped_mid_event,
            ended,
            lambda c: c.fail(503, "server_error", "draining"),
            lambda c: c.fail(500, "server_error"),
            sends(6),
        )
        stream = self.client(server, max_retries=0).events.stream()
        self.assertEqual([e["id"] for e in self.take(stream, 6)], [f"evt_{n}" for n in range(1, 7)])
        stream.close()
        requests = server.received()
        self.assertEqual([r.headers.get("last-event-id") for r in requests], [None, "evt_2", "evt_5", "evt_5", "evt_5"])
        # Backoff grows while reconnecting fails and starts over once a connection opens.
        self.assertEqual(self.sleeps, [0.375, 0.375, 0.75, 1.5])
        self.assertEqual([(type(r.error), r.attempt, r.max_attempts) for r in self.retries], [
            (convo.ConnectionError, 2, None),
            (convo.ConnectionError, 2, None),
            (convo.ServerError, 3, None),
            (convo.ServerError, 4, None),
        ])

    def test_backoff_grows_while_connections_open_but_bring_nothing(self) -> None:
        def sends_one_and_ends(c: Connection) -> None:
            c.open_stream()
            c.write(frame(event(1)))
            c.end()

        def ends(c: Connection) -> None:
            c.open_stream()
            c.end()

        server = self.serve(sends_one_and_ends, ends, ends, sends(2))
        stream = self.client(server).events.stream()
        self.assertEqual([e["id"] for e in self.take(stream, 2)], ["evt_1", "evt_2"])
        stream.close()
        self.assertEqual([r.headers.get("last-event-id") for r in server.received()], [None, "evt_1", "evt_1", "evt_1"])
        self.assertEqual(self.sleeps, [0.375, 0.75, 1.5])

    def test_the_servers_retry_is_the_least_wait(self) -> None:
        def asks_for_five_seconds(c: Connection) -> None:
            c.open_stream()
            c.write(b"retry: 5000\n\n" + frame(event(1)))
            c.end()

        server = self.serve(asks_for_five_seconds, sends(2))
        stream = self.client(server).events.stream()
        self.assertEqual([e["id"] for e in self.take(stream, 2)], ["evt_1", "evt_2"])
        stream.close()
        self.assertEqual(self.sleeps, [5.0])

    def test_an_answer_that_is_not_an_event_stream_raises(self) -> None:
        def json_page(c: Connection) -> None:
            body = b'{"data": []}'
            c.send_response(200)
            c.send_header("Content-Type", "application/json")
            c.send_header("Content-Length", str(len(body)))
            c.end_headers()
            c.wfile.write(body)

        server = self.serve(json_page)
        with self.assertRaisesRegex(convo.ServerError, "not an event stream"):
            next(self.client(server).events.stream())
        self.assertEqual(len(server.received()), 1)

    def test_data_that_is_not_json_raises(self) -> None:
        def garbage(c: Connection) -> None:
            c.open_stream()
            c.write(b"id: evt_1\ndata: <html>\n\n")
            c.hold()

        server = self.serve(garbage)
        with self.assertRaisesRegex(convo.ServerError, "not JSON"):
            next(self.client(server).events.stream())
        self.assertTrue(server.closed.wait(PROMPTLY), "the connection is closed")

    def test_a_server_restart_loses_nothing(self) -> None:
        going_down = threading.Event()

        def then_crashes(c: Connection) -> None:
            c.open_stream()
            c.write(frame(event(1)) + frame(event(2)))
            going_down.wait(PROMPTLY)
            c.drop()

        first = self.serve(then_crashes)
        restarted: List[SSEServer] = []

        def sleep(seconds: float) -> None:
            self.sleeps.append(seconds)
            if len(self.sleeps) == 1:
                first.stop()  # connections are refused until it is back
            if len(self.sleeps) == 4:
                restarted.append(self.serve(sends(3, 4), port=first.port))

        stream = self.client(first, sleep=sleep, max_retries=0).events.stream()
        self.assertEqual([e["id"] for e in self.take(stream, 2)], ["evt_1", "evt_2"])
        going_down.set()
        self.assertEqual([e["id"] for e in self.take(stream, 2)], ["evt_3", "evt_4"])
        stream.close()
        (after,) = restarted[0].received()
        self.assertEqual(after.headers.get("last-event-id"), "evt_2")
        # Refused three times over, past max_retries=0: a stream that has opened keeps reconnecting.
        self.assertEqual([(type(r.error), r.attempt, r.max_attempts) for r in self.retries], [(convo.ConnectionError, n, None) for n in (2, 3, 4, 5)])
        self.assertEqual(self.sleeps, [0.375, 0.75, 1.5, 3.0])

    def test_a_429_waits_its_retry_after(self) -> None:
        server = self.serve(lambda c: c.fail(429, "rate_limited", "5 streams are open", {"Retry-After": "7"}), sends(1))
        stream = self.client(server).events.stream()
        self.assertEqual(next(stream)["id"], "evt_1")
        stream.close()
        self.assertEqual(self.sleeps, [7.0])
        self.assertIsInstance(self.retries[0].error, convo.RateLimitedError)
        self.assertEqual(len(server.received()), 2)

    def test_other_4xx_raise_the_usual_errors_without_retrying(self) -> None:
        for status, code, cls in ((400, "bad_request", convo.BadRequestError), (401, "unauthorized", convo.UnauthorizedError), (403, "forbidden", convo.ForbiddenError)):
            with self.subTest(status):
                server = self.serve(lambda c, status=status, code=code: c.fail(status, code, "no stream for you"))
                with self.assertRaises(cls) as raised:
                    next(self.client(server).events.stream())
                self.assertEqual((raised.exception.status, raised.exception.request_id, raised.exception.message), (status, "req_stream", "no stream for you"))
                self.assertEqual(len(server.received()), 1)
        self.assertEqual(self.sleeps, [])

    def test_a_4xx_after_the_stream_opened_raises_too(self) -> None:
        def drops_after_one(c: Connection) -> None:
            c.open_stream()
            c.write(frame(event(1)))
            c.drop()

        server = self.serve(drops_after_one, lambda c: c.fail(401, "unauthorized", "key revoked"))
        stream = self.client(server).events.stream()
        next(stream)
        with self.assertRaises(convo.UnauthorizedError):
            next(stream)

    def test_a_stream_that_never_opens_gives_up_after_max_retries(self) -> None:
        with socket.socket() as probe:  # a port nothing listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        client = convo.Client(api_key="k", base_url=f"http://127.0.0.1:{port}/v1", sleep=self.sleeps.append, jitter=lambda: 0.5, on_retry=self.retries.append)
        with self.assertRaises(convo.ConnectionError):
            next(client.events.stream())
        self.assertEqual(self.sleeps, [0.375, 0.75])
        self.assertEqual([(r.attempt, r.max_attempts) for r in self.retries], [(2, 3), (3, 3)])

    def test_5xx_before_the_stream_opens_counts_against_max_retries(self) -> None:
        server = self.serve(*[lambda c: c.fail(503, "server_error")] * 2)
        with self.assertRaises(convo.ServerError):
            next(self.client(server, max_retries=1).events.stream())
        self.assertEqual(len(server.received()), 2)


class OnAnyTransport(unittest.TestCase):
    def test_silence_past_the_timeout_reconnects_after_the_last_event(self) -> None:
        transport = StallingTransport()
        client = convo.Client(api_key="k", base_url="https://api.example.com/v1", transport=transport, sleep=lambda _: None)
        stream = client.events.stream()
        self.assertEqual([next(stream)["id"], next(stream)["id"]], ["evt_1", "evt_2"])
        stream.close()
        self.assertEqual([h.get("Last-Event-ID") for h in transport.headers], [None, "evt_1"])
        self.assertEqual(transport.timeouts, [30.0, 30.0], "a stream's timeout is never shorter than twice the keep-alive interval")

    def test_a_transport_without_stream_is_refused(self) -> None:
        class RequestOnly:
            def request(self, method: str, url: str, headers: Any, body: Optional[bytes], timeout: float) -> HttpResponse:
                raise AssertionError("not called")

        client = convo.Client(api_key="k", transport=RequestOnly())
        with self.assertRaisesRegex(TypeError, "StreamingTransport"):
            next(client.events.stream())

    def test_the_fake_transport_streams_one_body(self) -> None:
        transport = FakeTransport(HttpResponse(200, {"content-type": "text/event-stream"}, frame(event(1))), error(401, "unauthorized"))
        client = convo.Client(api_key="k", transport=transport, sleep=lambda _: None)
        stream = client.events.stream()
        self.assertEqual(next(stream), event(1))
        with self.assertRaises(convo.UnauthorizedError):
            next(stream)


class StallingTransport:
    """Each connection sends one event, then its next read times out."""

    def __init__(self) -> None:
        self.headers: List[Dict[str, str]] = []
        self.timeouts: List[float] = []

    def request(self, method: str, url: str, headers: Any, body: Optional[bytes], timeout: float) -> HttpResponse:
        raise AssertionError("stream() is called, not request()")

    def stream(self, method: str, url: str, headers: Any, timeout: float) -> StreamedResponse:
        self.headers.append(dict(headers))
        self.timeouts.append(timeout)
        number = len(self.headers)

        def chunks() -> Any:
            yield frame(event(number))
            raise convo.TimeoutError(f"Nothing received for {timeout} s", code="timeout")

        return StreamedResponse(200, {"content-type": "text/event-stream"}, chunks())


if __name__ == "__main__":
    unittest.main()
