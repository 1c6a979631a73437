"""End to end against the real server the test run started (scripts/run-tests.mjs): every operation,
pagination across pages, every error class, a webhook delivery verified with verify_webhook, and
the live event stream, followed through a restart of a second server on the same database."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import queue
import random
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request
from typing import Any, Callable, Dict, Generator, List, Optional, Set, Tuple

import convo
from convo._operations import SDK_METHODS

from .support import REPO_ROOT, e2e_settings


def phone() -> str:
    return "+55119" + "".join(random.choice("0123456789") for _ in range(8))


class Receiver(http.server.BaseHTTPRequestHandler):
    deliveries: "queue.Queue[Tuple[bytes, Dict[str, str]]]" = queue.Queue()

    def do_POST(self) -> None:
        payload = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.deliveries.put((payload, {k: v for k, v in self.headers.items()}))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Following:
    """Reads an event stream on a thread, so that a test waits for its events with a deadline."""

    def __init__(self, stream: Generator[Any, None, None]) -> None:
        self.events: "queue.Queue[Any]" = queue.Queue()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: Generator[Any, None, None]) -> None:
        try:
            for event in stream:
                self.events.put(event)
                if self.stopping.is_set():
                    break
        except BaseException as error:  # handed to the test, which raises it
            self.events.put(error)
        finally:
            stream.close()

    def take(self, count: int, within: float = 20) -> List[Any]:
        taken: List[Any] = []
        for _ in range(count):
            try:
                item = self.events.get(timeout=within)
            except queue.Empty:
                raise AssertionError(f"the stream brought {len(taken)} of {count} events within {within} s: {taken}") from None
            if isinstance(item, BaseException):
                raise item
            taken.append(item)
        return taken

    def stop(self, wake: Callable[[], Any]) -> None:
        """Stops after one more event, which `wake` makes happen: a blocked read cannot be interrupted."""
        self.stopping.set()
        wake()
        self.thread.join(timeout=20)


class SecondServer:
    """`convo-server serve` on the test run's database and a port of its own, to stop and start again."""

    def __init__(self, database_url: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "NODE_ENV": "test",
            "LOG_LEVEL": "silent",
            "CONVO_DRAIN_SECONDS": "0",
            "CONVO_WORKER": "false",
        }
        self.env.pop("CONVO_PUBLIC_URL", None)
        self.process: Optional["subprocess.Popen[bytes]"] = None

    def start(self) -> None:
        self.process = subprocess.Popen(["node", str(REPO_ROOT / "apps" / "api" / "dist" / "bin.js"), "serve"], env=self.env, stdout=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"the second server exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/openapi.json", timeout=5):
                    return
            except OSError:
                if time.time() > deadline:
                    raise AssertionError("the second server did not answer within 30 s") from None
                time.sleep(0.1)  # not listening yet

    def stop(self) -> None:
        """SIGTERM, as a supervisor restarting it sends, and waits for it to exit."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)


class EndToEnd(unittest.TestCase):
    settings: Dict[str, str]
    client: convo.Client
    called: Set[str] = set()

    @classmethod
    def setUpClass(cls) -> None:
        cls.settings = e2e_settings()
        cls.client = convo.Client(api_key=cls.settings["api_key"], base_url=cls.settings["base_url"])
        original = cls.client._sender.send  # pyright: ignore[reportPrivateUsage]

        def recording(operation_id: str, **kwargs: Any) -> Any:
            cls.called.add(operation_id)
            return original(operation_id, **kwargs)

        cls.client._sender.send = recording  # pyright: ignore[reportPrivateUsage]
        original_stream = cls.client._sender.stream  # pyright: ignore[reportPrivateUsage]

        def recording_stream(operation_id: str, **kwargs: Any) -> Generator[Any, None, None]:
            cls.called.add(operation_id)
            return original_stream(operation_id, **kwargs)

        cls.client._sender.stream = recording_stream  # pyright: ignore[reportPrivateUsage]

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()

    def test_1_conversations_messages_contacts_tags(self) -> None:
        c = self.client
        contact = c.contacts.create(name="Bia Lima", phone=phone(), email="bia@example.com", tags=["sdk-python"], attributes={"tier": 2})
        self.assertTrue(contact["id"].startswith("ct_"))
        self.assertEqual(c.contacts.retrieve(contact["id"])["email"], "bia@example.com")
        self.assertIsNone(c.contacts.update(contact["id"], email=None)["email"])
        self.assertIn("vip-py", c.contacts.tags.add(contact["id"], "vip-py")["tags"])
        self.assertNotIn("vip-py", c.contacts.tags.remove(contact["id"], "vip-py")["tags"])
        self.assertIn(contact["id"], [x["id"] for x in c.contacts.list(tag="sdk-python")])
        self.assertIn("sdk-python", [t["name"] for t in c.tags.list(limit=100)])
        self.assertEqual(c.tags.update("sdk-python", name="sdk-py")["name"], "sdk-py")
        self.assertEqual(c.contacts.retrieve(contact["id"])["tags"], ["sdk-py"])
        self.assertIsNone(c.tags.delete("sdk-py"))
        self.assertEqual(c.contacts.retrieve(contact["id"])["tags"], [])
        c.contacts.tags.add(contact["id"], "sdk-python")

        conversation = c.conversations.create(contact_id=contact["id"], platform="whatsapp")
        self.assertEqual(c.conversations.retrieve(conversation["id"])["status"], "active")
        message = c.messages.send(conversation_id=conversation["id"], content="Olá Bia 👋")
        self.assertEqual(c.messages.retrieve(message["id"])["content"], "Olá Bia 👋")
        self.assertEqual([m["id"] for m in c.conversations.list_messages(conversation["id"])], [message["id"]])
        self.assertEqual(c.conversations.update(conversation["id"], status="resolved")["status"], "resolved")

        order = c.orders.create(contact_id=contact["id"], currency="BRL", items=[{"name": "Caneca", "quantity": 2, "unit_amount": 2500}])
        self.assertEqual(order["total_amount"], 5000)
        self.assertEqual(c.orders.retrieve(order["id"])["number"], order["number"])
        self.assertEqual(c.orders.update(order["id"], status="paid")["status"], "paid")
        self.assertIn(order["id"], [o["id"] for o in c.orders.list(contact_id=contact["id"])])

        workflow = c.workflows.create(name="Tag buyers", steps=[{"type": "add_tag", "tag": "buyer"}])
        self.assertEqual(c.workflows.retrieve(workflow["id"])["name"], "Tag buyers")
        self.assertIn(workflow["id"], [w["id"] for w in c.workflows.list()])
        run = c.workflows.trigger(workflow["id"], contact_id=contact["id"], data={"order": order["number"]})
        self.assertEqual(run["workflow_id"], workflow["id"])
        self.assertIn(run["id"], [r["id"] for r in c.workflows.runs(workflow["id"])])
        self.assertEqual(c.workflows.retrieve_run(workflow["id"], run["id"])["id"], run["id"])
        waiting = c.workflows.create(
            name="Wait a day",
            steps=[
                {"type": "wait", "seconds": 86400},
                {"type": "if", "conditions": [{"field": "data.vip", "op": "eq", "value": True}], "then": [{"type": "add_tag", "tag": "later"}]},
            ],
        )
        queued = c.workflows.trigger(waiting["id"], contact_id=contact["id"])
        self.assertEqual([s.get("path") for s in queued["steps"]], ["0", "1", "1.then.0"])
        self.assertEqual(c.workflows.cancel_run(waiting["id"], queued["id"])["status"], "cancelled")
        self.assertFalse(c.workflows.update(waiting["id"], enabled=False)["enabled"])
        self.assertIsNone(c.workflows.delete(waiting["id"]))
        with self.assertRaises(convo.NotFoundError):
            c.workflows.retrieve(waiting["id"])

        self.assertTrue(all(e["type"] == "order.placed" for e in c.events.list(type="order.placed", limit=5).data))

        self.assertIsNone(c.contacts.delete(contact["id"]))
        with self.assertRaises(convo.NotFoundError):
            c.contacts.retrieve(contact["id"])

    def test_2_channels(self) -> None:
        c = self.client
        channel = c.channels.create(platform="whatsapp", external_id=str(random.randrange(10**9, 10**10)), access_token="token", app_secret="secret")
        self.assertEqual(c.channels.retrieve(channel["id"])["platform"], "whatsapp")
        self.assertEqual(c.channels.update(channel["id"], name="Support line")["name"], "Support line")
        self.assertIn(channel["id"], [x["id"] for x in c.channels.list(platform="whatsapp")])
        self.assertIsNone(c.channels.delete(channel["id"]))
        number = c.channels.create(
            platform="whatsapp",
            external_id=str(random.randrange(10**9, 10**10)),
            access_token=os.environ["CONVO_TEST_WABA_TOKEN"],
            app_secret="secret",
            business_account_id=os.environ["CONVO_TEST_WABA"],
        )
        approved = list(c.channels.list_templates(number["id"], status="APPROVED"))
        self.assertEqual([(t["name"], t["language"], t["status"]) for t in approved], [("order_shipped", "en_US", "APPROVED")])

    def test_2_files(self) -> None:
        c = self.client
        data = bytes(range(256)) * 1000
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "receipt 1042.pdf")
            with open(path, "wb") as out:
                out.write(data)
            with open(path, "rb") as source:
                made = c.files.create(file=source)
            by_path = c.files.create(file=path)
        self.assertEqual((by_path["filename"], by_path["sha256"]), ("receipt 1042.pdf", made["sha256"]))
        self.assertEqual((made["filename"], made["mime_type"], made["size"]), ("receipt 1042.pdf", "application/pdf", len(data)))
        self.assertEqual(made["sha256"], hashlib.sha256(data).hexdigest())
        self.assertEqual(c.files.retrieve(made["id"]), made)
        self.assertEqual(c.files.content(made["id"]), data)
        named = c.files.create(file=b"hello", filename="note.txt", mime_type="text/plain")
        self.assertEqual((named["filename"], named["mime_type"], named["size"]), ("note.txt", "text/plain", 5))

    def test_3_pagination_across_pages(self) -> None:
        first = self.client.conversations.list(limit=3)
        self.assertGreater(first.total, 6, "the demo account has conversations on several pages")
        every = list(first)
        self.assertEqual(len(every), first.total)
        self.assertEqual(len({c["id"] for c in every}), first.total, "no record twice")
        self.assertEqual([c["id"] for c in every[:3]], [c["id"] for c in first.data])
        second = first.next_page()
        assert second is not None
        self.assertEqual((second.offset, [c["id"] for c in second.data]), (3, [c["id"] for c in every[3:6]]))
        active = [c["status"] for c in self.client.conversations.list(status="active", limit=2).auto_paging_iter()]
        self.assertTrue(active and set(active) == {"active"})

    def test_4_errors(self) -> None:
        s = self.settings
        with self.assertRaises(convo.BadRequestError) as bad:
            self.client.contacts.create(phone="555")
        self.assertEqual((bad.exception.status, bad.exception.code), (400, "bad_request"))
        self.assertEqual(bad.exception.details and bad.exception.details["field"], "phone")
        self.assertTrue(bad.exception.request_id)

        with self.assertRaises(convo.UnauthorizedError) as unauthorized:
            convo.Client(api_key="convo_sk_nope", base_url=s["base_url"]).conversations.list()
        self.assertEqual(unauthorized.exception.status, 401)

        with self.assertRaises(convo.ForbiddenError):
            convo.Client(api_key=s["read_only_key"], base_url=s["base_url"]).contacts.create(phone=phone())

        with self.assertRaises(convo.NotFoundError):
            self.client.conversations.retrieve("conv_missing")

        limited = convo.Client(api_key=s["limited_key"], base_url=s["base_url"], max_retries=0)
        with self.assertRaises(convo.RateLimitedError) as limited_error:
            for _ in range(3):
                limited.tags.list()
        self.assertEqual(limited_error.exception.status, 429)
        self.assertIsNotNone(limited_error.exception.retry_after)

        with socket.socket() as probe:  # a port nothing listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with self.assertRaises(convo.ConnectionError):
            convo.Client(api_key="k", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0).tags.list()

    def test_4_errors_from_a_server_that_fails_or_stalls(self) -> None:
        """The real server does not fail on demand: a local one answers 500, then stalls past the timeout."""
        stall = threading.Event()

        class Failing(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/v1/slow"):
                    stall.wait(5)
                    return
                body = json.dumps({"error": {"code": "server_error", "message": "Something broke (request req_1)"}}).encode()
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("X-Request-Id", "req_1")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Failing)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            base = f"http://127.0.0.1:{server.server_address[1]}/v1"
            client = convo.Client(api_key="k", base_url=base, max_retries=1, sleep=lambda _: None)
            with self.assertRaises(convo.ServerError) as failed:
                client.tags.list()
            self.assertEqual((failed.exception.status, failed.exception.request_id), (500, "req_1"))
            slow = convo.Client(api_key="k", base_url=base + "/slow", timeout=0.3, max_retries=0)
            with self.assertRaises(convo.TimeoutError):
                slow.tags.list()
        finally:
            stall.set()
            server.shutdown()
            server.server_close()

    def test_5_webhook_delivery_is_verified(self) -> None:
        c = self.client
        receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=receiver.serve_forever, daemon=True).start()
        try:
            endpoint = c.webhook_endpoints.create(url=f"http://127.0.0.1:{receiver.server_address[1]}/hooks", events=["message.received"], description="sdk-python")
            # The account has a webhook key already: no new secret comes with the endpoint.
            self.assertNotIn("secret", endpoint)
            self.assertEqual(c.webhook_endpoints.retrieve(endpoint["id"])["url"], endpoint["url"])
            self.assertIn(endpoint["id"], [e["id"] for e in c.webhook_endpoints.list()])
            inbound = c.sandbox.inbound(platform="whatsapp", from_={"phone": phone(), "name": "Caio"}, content="Oi, meu pedido?")
            payload, headers = Receiver.deliveries.get(timeout=20)
            event = convo.verify_webhook(payload, headers, self.settings["webhook_secret"])
            self.assertEqual((event["type"], event["data"]["id"]), ("message.received", inbound["id"]))
            with self.assertRaises(convo.WebhookVerificationError):
                convo.verify_webhook(payload + b" ", headers, self.settings["webhook_secret"])

            deliveries = self._wait_for_deliveries(endpoint["id"])
            self.assertEqual(deliveries[0]["event_id"], event["id"])
            retried = c.webhook_endpoints.retry_delivery(endpoint["id"], deliveries[0]["id"])
            self.assertEqual((retried["id"], retried["status"]), (deliveries[0]["id"], "pending"))
            again, again_headers = Receiver.deliveries.get(timeout=20)
            self.assertEqual(convo.verify_webhook(again, again_headers, self.settings["webhook_secret"])["id"], event["id"])

            ping = c.webhook_endpoints.test(endpoint["id"])
            self.assertEqual((ping["event_type"], ping["status"]), ("ping", "succeeded"))
            ping_body, ping_headers = Receiver.deliveries.get(timeout=20)
            self.assertEqual(convo.verify_webhook(ping_body, ping_headers, self.settings["webhook_secret"])["type"], "ping")
            replay = c.webhook_endpoints.replay(endpoint["id"], since="2026-01-01T00:00:00Z", until="2099-01-01T00:00:00Z", status="succeeded")
            self.assertGreaterEqual(replay["replayed"], 2)
            for _ in range(replay["replayed"]):
                Receiver.deliveries.get(timeout=20)

            self.assertEqual(c.webhook_endpoints.update(endpoint["id"], status="disabled")["status"], "disabled")
            self.assertIsNone(c.webhook_endpoints.delete(endpoint["id"]))
        finally:
            receiver.shutdown()
            receiver.server_close()

    def _wait_for_deliveries(self, endpoint_id: str) -> Any:
        deadline = time.time() + 10
        while True:
            deliveries = list(self.client.webhook_endpoints.deliveries(endpoint_id, status="succeeded"))
            if deliveries or time.time() > deadline:
                return deliveries
            time.sleep(0.2)

    def test_6_idempotency_key_replays_the_first_answer(self) -> None:
        number = phone()
        options: convo.RequestOptions = {"idempotency_key": f"sdk-python-{number}"}
        first = self.client.contacts.create(phone=number, request_options=options)
        second = self.client.contacts.create(phone=number, request_options=options)
        self.assertEqual(first, second)

    def test_7_events_since_and_follow(self) -> None:
        c = self.client
        c.contacts.create(phone=phone())
        origin = c.events.list(limit=1).data[0]["id"]
        made = [c.contacts.create(phone=phone())["id"] for _ in range(3)]
        self.assertEqual([e["data"]["id"] for e in c.events.since(origin)], made)
        self.assertEqual(list(c.events.since(origin, type="contact.deleted")), [])

        stop = threading.Event()
        followed: "queue.Queue[Any]" = queue.Queue()
        newest = c.events.list(limit=1).data[0]["id"]

        def follow() -> None:
            for event in c.events.follow(after=newest, type="contact.created", interval=0.05, stop=stop):
                followed.put(event)

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        later = c.contacts.create(phone=phone())
        c.contacts.update(later["id"], name="Not followed")
        last = c.contacts.create(phone=phone())
        got = [followed.get(timeout=10), followed.get(timeout=10)]
        stop.set()
        thread.join(timeout=10)
        self.assertEqual([(e["type"], e["data"]["id"]) for e in got], [("contact.created", later["id"]), ("contact.created", last["id"])])

    def test_8_events_stream(self) -> None:
        c = self.client
        contact = c.contacts.create(phone=phone())
        conversation = c.conversations.create(contact_id=contact["id"], platform="whatsapp")
        origin = c.events.list(limit=1).data[0]["id"]
        types = ["message.received", "message.updated", "conversation.created", "conversation.updated"]
        # From a known event, so that what follows is streamed however soon the thread connects.
        following = Following(c.events.stream(type=types, starting_after=origin))
        streams = [following]
        try:
            sent = c.messages.send(conversation_id=conversation["id"], content="Seu pedido saiu para entrega")
            inbound = c.sandbox.inbound(platform="whatsapp", from_={"phone": phone(), "name": "Duda"}, content="Chegou, obrigada!")
            logged = [e for e in c.events.since(origin) if e["type"] in types]
            streamed = following.take(len(logged))
            self.assertEqual(streamed, logged, "the stream carries what the log holds, in its order")
            self.assertEqual([e["type"] for e in streamed][-2:], ["conversation.created", "message.received"])
            self.assertEqual(streamed[-1]["data"]["id"], inbound["id"])
            self.assertEqual(c.messages.retrieve(sent["id"])["conversation_id"], conversation["id"])
            only_inbound = Following(c.events.stream(type="message.received", starting_after=origin))
            streams.append(only_inbound)
            self.assertEqual(only_inbound.take(1)[0]["data"]["id"], inbound["id"])
        finally:
            for stream in streams:
                stream.stop(lambda: c.sandbox.inbound(platform="whatsapp", from_={"phone": phone()}, content="fim"))

    def test_8_events_stream_through_a_server_restart(self) -> None:
        """A second server on the same database streams; it restarts while contacts are created
        through the first one, and the stream resumes after the last event it gave: each once, in order."""
        c = self.client
        second = SecondServer(os.environ["CONVO_TEST_DATABASE_URL"])
        second.start()
        reconnects: List[convo.RetryEvent] = []
        client = convo.Client(api_key=self.settings["api_key"], base_url=second.base_url, jitter=lambda: 0.0, on_retry=reconnects.append)
        origin = c.events.list(limit=1).data[0]["id"]
        following = Following(client.events.stream(type="contact.created", starting_after=origin))
        try:
            made = [c.contacts.create(phone=phone())["id"]]
            self.assertEqual([e["data"]["id"] for e in following.take(1)], made)
            second.stop()
            made += [c.contacts.create(phone=phone())["id"] for _ in range(2)]
            second.start()
            made += [c.contacts.create(phone=phone())["id"] for _ in range(2)]
            self.assertEqual([e["data"]["id"] for e in following.take(4)], made[1:])
            self.assertTrue(reconnects, "the stream reconnected")
            self.assertTrue(all(isinstance(r.error, (convo.ConnectionError, convo.ServerError)) for r in reconnects), reconnects)
            # Nothing came twice: the next event is the next contact.
            made.append(c.contacts.create(phone=phone())["id"])
            self.assertEqual(following.take(1)[0]["data"]["id"], made[-1])
        finally:
            following.stop(lambda: c.contacts.create(phone=phone()))
            second.stop()

    def test_9_every_operation_was_called(self) -> None:
        missing = set(SDK_METHODS) - self.called
        self.assertFalse(missing, f"operations no end-to-end test called: {sorted(missing)}")


if __name__ == "__main__":
    unittest.main()
