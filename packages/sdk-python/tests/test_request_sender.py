"""The one request sender: exact requests, retries, backoff, idempotency, errors."""

from __future__ import annotations

import json
import os
import unittest
from unittest import mock

import convo
from convo import HttpResponse

from .support import error, fake_client, respond

CONTACT = {"id": "ct_1", "name": "Ana", "phone": "+5511912345678", "email": None, "tags": [], "attributes": {}, "identities": [], "created_at": "x", "updated_at": "x"}


class ExactRequests(unittest.TestCase):
    def test_get_sends_the_key_and_accepts_json_without_a_body(self) -> None:
        client, transport, _ = fake_client(respond(200, CONTACT))
        self.assertEqual(client.contacts.retrieve("ct_1"), CONTACT)
        (request,) = transport.requests
        self.assertEqual(request.method, "GET")
        self.assertEqual(request.url, "https://api.example.com/v1/contacts/ct_1")
        self.assertEqual(request.headers["Authorization"], "Bearer convo_sk_test")
        self.assertEqual(request.headers["Accept"], "application/json")
        self.assertEqual(request.headers["User-Agent"], f"convo-python/{convo.__version__}")
        self.assertNotIn("Content-Type", request.headers)
        self.assertNotIn("Idempotency-Key", request.headers)
        self.assertIsNone(request.body)
        self.assertEqual(request.timeout, 30.0)

    def test_post_sends_json_and_an_idempotency_key(self) -> None:
        client, transport, _ = fake_client(respond(201, CONTACT))
        client.contacts.create(phone="+5511912345678", name="Ana", tags=["vip"], attributes={"tier": 2})
        (request,) = transport.requests
        self.assertEqual((request.method, request.path), ("POST", "/v1/contacts"))
        self.assertEqual(request.headers["Content-Type"], "application/json")
        self.assertEqual(request.json(), {"phone": "+5511912345678", "name": "Ana", "tags": ["vip"], "attributes": {"tier": 2}})
        self.assertRegex(request.headers["Idempotency-Key"], r"^[0-9a-f-]{36}$")

    def test_patch_sends_json_and_no_idempotency_key(self) -> None:
        client, transport, _ = fake_client(respond(200, CONTACT))
        client.contacts.update("ct_1", email=None)
        (request,) = transport.requests
        self.assertEqual((request.method, request.path, request.json()), ("PATCH", "/v1/contacts/ct_1", {"email": None}))
        self.assertNotIn("Idempotency-Key", request.headers)

    def test_delete_answers_none_for_204(self) -> None:
        client, transport, _ = fake_client(HttpResponse(204, {}, b""))
        self.assertIsNone(client.contacts.delete("ct_1"))
        self.assertEqual((transport.requests[0].method, transport.requests[0].path), ("DELETE", "/v1/contacts/ct_1"))

    def test_query_skips_none_and_writes_booleans_and_numbers_as_the_wire_does(self) -> None:
        client, transport, _ = fake_client(respond(200, {"data": [], "total": 0, "limit": 5, "offset": 10, "has_more": False}))
        client.conversations.list(status="active", search="ana souza", limit=5, offset=10)
        (request,) = transport.requests
        self.assertEqual(request.path, "/v1/conversations")
        self.assertEqual(request.query, {"status": "active", "search": "ana souza", "limit": "5", "offset": "10"})
        self.assertIn("search=ana+souza", request.url)

    def test_path_parameters_are_url_encoded(self) -> None:
        client, transport, _ = fake_client(respond(200, CONTACT))
        client.contacts.tags.remove("ct_1", "vip/gold silver")
        self.assertEqual(transport.requests[0].url, "https://api.example.com/v1/contacts/ct_1/tags/vip%2Fgold%20silver")

    def test_keyword_named_fields_go_on_the_wire_under_their_name(self) -> None:
        client, transport, _ = fake_client(respond(201, {"id": "msg_1"}))
        client.sandbox.inbound(platform="whatsapp", from_={"phone": "+5511912345678", "name": "Ana"}, content="Oi")
        self.assertEqual(transport.requests[0].json(), {"platform": "whatsapp", "from": {"phone": "+5511912345678", "name": "Ana"}, "content": "Oi"})

    def test_request_options_set_the_key_the_timeout_and_the_retries(self) -> None:
        client, transport, _ = fake_client(error(500, "server_error"))
        with self.assertRaises(convo.ServerError):
            client.orders.create(contact_id="ct_1", currency="BRL", items=[{"name": "Mug", "quantity": 1, "unit_amount": 100}],
                                 request_options={"idempotency_key": "order-1001", "timeout": 2.5, "max_retries": 0})
        (request,) = transport.requests
        self.assertEqual(request.headers["Idempotency-Key"], "order-1001")
        self.assertEqual(request.timeout, 2.5)

    def test_key_and_address_come_from_the_environment(self) -> None:
        with mock.patch.dict(os.environ, {"CONVO_API_KEY": "convo_sk_env", "CONVO_BASE_URL": "http://localhost:9/v1/"}):
            client = convo.Client()
        self.assertEqual(client.base_url, "http://localhost:9/v1")
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertEqual(convo.Client(api_key="k").base_url, "http://127.0.0.1:3000/v1")
            with self.assertRaises(TypeError):
                convo.Client()

    def test_the_client_is_a_context_manager(self) -> None:
        closed: list[bool] = []

        class Closing:
            def request(self, method: str, url: str, headers: object, body: object, timeout: float) -> HttpResponse:
                raise AssertionError("no request")

            def close(self) -> None:
                closed.append(True)

        with convo.Client(api_key="k", transport=Closing()) as client:
            self.assertIsInstance(client, convo.Client)
        self.assertEqual(closed, [True])


class Retries(unittest.TestCase):
    def test_5xx_is_retried_with_exponential_backoff_and_the_same_idempotency_key(self) -> None:
        client, transport, sleeps = fake_client(error(500, "server_error"), error(503, "server_error"), respond(201, CONTACT))
        self.assertEqual(client.contacts.create(phone="+5511912345678"), CONTACT)
        self.assertEqual(len(transport.requests), 3)
        keys = {r.headers["Idempotency-Key"] for r in transport.requests}
        self.assertEqual(len(keys), 1)
        self.assertEqual({r.body for r in transport.requests}, {transport.requests[0].body})
        # backoff 0.5 s, 1 s (× jitter between ½ and 1: the fake jitter is 0.5 → ¾)
        self.assertEqual(sleeps, [0.375, 0.75])

    def test_each_post_gets_its_own_key(self) -> None:
        client, transport, _ = fake_client(respond(201, CONTACT), respond(201, CONTACT))
        client.contacts.create(phone="+5511912345678")
        client.contacts.create(phone="+5511912345678")
        self.assertNotEqual(transport.requests[0].headers["Idempotency-Key"], transport.requests[1].headers["Idempotency-Key"])

    def test_jitter_spreads_the_wait_between_half_and_all_of_the_backoff(self) -> None:
        jitter = iter([0.0, 1.0]).__next__
        client, _, sleeps = fake_client(error(500, "server_error"), error(500, "server_error"), respond(200, CONTACT), max_retries=5, jitter=jitter)
        client.contacts.retrieve("ct_1")
        self.assertEqual(sleeps, [0.25, 1.0])

    def test_backoff_is_capped(self) -> None:
        replies = [error(502, "server_error")] * 6 + [respond(200, CONTACT)]
        client, _, sleeps = fake_client(*replies, max_retries=6, jitter=lambda: 1.0)
        client.contacts.retrieve("ct_1")
        self.assertEqual(sleeps, [0.5, 1.0, 2.0, 4.0, 8.0, 8.0])

    def test_network_errors_and_timeouts_are_retried(self) -> None:
        client, transport, sleeps = fake_client(
            convo.ConnectionError("refused", code="connection_error"),
            convo.TimeoutError("slow", code="timeout"),
            respond(201, CONTACT),
        )
        client.contacts.create(phone="+5511912345678")
        self.assertEqual(len(transport.requests), 3)
        self.assertEqual(len({r.headers["Idempotency-Key"] for r in transport.requests}), 1)
        self.assertEqual(len(sleeps), 2)

    def test_429_waits_as_long_as_retry_after_says(self) -> None:
        client, transport, sleeps = fake_client(error(429, "rate_limited", headers={"retry-after": "3"}), respond(200, CONTACT))
        client.contacts.retrieve("ct_1")
        self.assertEqual(len(transport.requests), 2)
        self.assertEqual(sleeps, [3.0])

    def test_on_retry_is_told_of_each_retry_before_its_wait(self) -> None:
        events: "list[convo.RetryEvent]" = []
        client, _, sleeps = fake_client(
            error(429, "rate_limited", headers={"retry-after": "3"}), error(503, "server_error"), respond(200, CONTACT), on_retry=events.append
        )
        client.contacts.retrieve("ct_1")
        self.assertEqual([(type(e.error), e.attempt, e.max_attempts, e.delay, e.method, e.path) for e in events], [
            (convo.RateLimitedError, 2, 3, 3.0, "GET", "/v1/contacts/ct_1"),
            (convo.ServerError, 3, 3, 0.75, "GET", "/v1/contacts/ct_1"),
        ])
        self.assertEqual(sleeps, [3.0, 0.75])

    def test_on_retry_is_not_called_when_the_error_goes_to_the_caller(self) -> None:
        events: "list[convo.RetryEvent]" = []
        client, _, _ = fake_client(error(404, "not_found"), on_retry=events.append)
        with self.assertRaises(convo.NotFoundError):
            client.contacts.retrieve("ct_1")
        self.assertEqual(events, [])

    def test_429_without_retry_after_backs_off(self) -> None:
        client, _, sleeps = fake_client(error(429, "rate_limited"), respond(200, CONTACT))
        client.contacts.retrieve("ct_1")
        self.assertEqual(sleeps, [0.375])

    def test_a_retry_after_over_a_minute_is_not_waited_out(self) -> None:
        client, transport, sleeps = fake_client(error(429, "rate_limited", headers={"retry-after": "120"}))
        with self.assertRaises(convo.RateLimitedError) as raised:
            client.contacts.retrieve("ct_1")
        self.assertEqual(raised.exception.retry_after, 120.0)
        self.assertEqual((len(transport.requests), sleeps), (1, []))

    def test_other_4xx_are_never_retried(self) -> None:
        for status, code in ((400, "bad_request"), (401, "unauthorized"), (403, "forbidden"), (404, "not_found"), (409, "bad_request")):
            client, transport, sleeps = fake_client(error(status, code))
            with self.assertRaises(convo.ConvoError):
                client.contacts.create(phone="+5511912345678")
            self.assertEqual((len(transport.requests), sleeps), (1, []), status)

    def test_the_last_error_is_raised_after_max_retries(self) -> None:
        client, transport, sleeps = fake_client(*[error(500, "server_error")] * 3)
        with self.assertRaises(convo.ServerError):
            client.contacts.retrieve("ct_1")
        self.assertEqual((len(transport.requests), len(sleeps)), (3, 2))
        client, transport, _ = fake_client(error(500, "server_error"), max_retries=0)
        with self.assertRaises(convo.ServerError):
            client.contacts.retrieve("ct_1")
        self.assertEqual(len(transport.requests), 1)


class Errors(unittest.TestCase):
    def raised(self, response: HttpResponse) -> convo.ConvoError:
        client, _, _ = fake_client(response, max_retries=0)
        with self.assertRaises(convo.ConvoError) as raised:
            client.contacts.retrieve("ct_1")
        return raised.exception

    def test_each_code_has_its_class(self) -> None:
        cases = {
            (400, "bad_request"): convo.BadRequestError,
            (401, "unauthorized"): convo.UnauthorizedError,
            (403, "forbidden"): convo.ForbiddenError,
            (404, "not_found"): convo.NotFoundError,
            (429, "rate_limited"): convo.RateLimitedError,
            (500, "server_error"): convo.ServerError,
        }
        for (status, code), cls in cases.items():
            raised = self.raised(error(status, code, "what happened"))
            self.assertIs(type(raised), cls)
            self.assertEqual((raised.status, raised.code, raised.message, raised.request_id), (status, code, "what happened", "req_test"))

    def test_details_and_body_are_kept(self) -> None:
        details = {"field": "phone", "constraint": "unique", "existing_id": "ct_9"}
        raised = self.raised(error(400, "bad_request", "taken", details))
        self.assertEqual(raised.details, details)
        self.assertEqual(raised.body, {"error": {"code": "bad_request", "message": "taken", "details": details}})
        self.assertIn("req_test", str(raised))

    def test_without_a_convo_body_the_status_decides(self) -> None:
        self.assertIsInstance(self.raised(HttpResponse(502, {}, b"<html>bad gateway</html>")), convo.ServerError)
        self.assertIsInstance(self.raised(HttpResponse(404, {}, b"")), convo.NotFoundError)
        raised = self.raised(HttpResponse(418, {}, b"{}"))
        self.assertEqual((type(raised), raised.code, raised.message), (convo.BadRequestError, "bad_request", "HTTP 418"))

    def test_retry_after_as_an_http_date(self) -> None:
        raised = self.raised(error(429, "rate_limited", headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}))
        assert isinstance(raised, convo.RateLimitedError)
        self.assertEqual(raised.retry_after, 0.0)

    def test_no_response_is_a_connection_error_or_a_timeout(self) -> None:
        for exc in (convo.ConnectionError("refused", code="connection_error"), convo.TimeoutError("slow", code="timeout")):
            client, _, _ = fake_client(exc, max_retries=0)
            with self.assertRaises(type(exc)) as raised:
                client.contacts.retrieve("ct_1")
            self.assertIsNone(raised.exception.status)
            self.assertIsInstance(raised.exception, convo.ConvoError)

    def test_a_success_body_is_parsed(self) -> None:
        client, _, _ = fake_client(HttpResponse(200, {}, json.dumps(CONTACT).encode()))
        self.assertEqual(client.contacts.retrieve("ct_1")["id"], "ct_1")


if __name__ == "__main__":
    unittest.main()
