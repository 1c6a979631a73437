"""verify_webhook: the shared vectors (checked by the TypeScript SDK's tests too) and the behaviour."""

from __future__ import annotations

import json
import time
import unittest
from datetime import datetime, timezone
from email.message import Message
from typing import Any, Dict

import convo
from convo import WebhookVerificationError, sign_webhook, verify_webhook

from .support import PACKAGE_DIR

VECTORS: Dict[str, Any] = json.loads((PACKAGE_DIR / "tests" / "fixtures" / "webhook-vectors.json").read_text(encoding="utf-8"))


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


class SharedVectors(unittest.TestCase):
    def test_signatures_are_made_alike_and_verified(self) -> None:
        made_by = {v["made_by"] for v in VECTORS["signatures"]}
        self.assertEqual(len(made_by), 2, "vectors signed by the JavaScript reference library and by this SDK")
        for vector in VECTORS["signatures"]:
            with self.subTest(made_by=vector["made_by"], id=vector["id"]):
                payload = vector["payload"].encode("utf-8")
                self.assertEqual(sign_webhook(payload, webhook_id=vector["id"], timestamp=vector["timestamp"], secret=vector["secret"]), vector["signature"])
                headers = {"webhook-id": vector["id"], "webhook-timestamp": str(vector["timestamp"]), "webhook-signature": vector["signature"]}
                self.assertEqual(verify_webhook(payload, headers, vector["secret"], now=at(vector["timestamp"])), json.loads(vector["payload"]))

    def test_verifications_give_the_same_result_as_in_typescript(self) -> None:
        for case in VECTORS["verifications"]:
            with self.subTest(case["name"]):
                call = lambda: verify_webhook(case["payload"].encode("utf-8"), case["headers"], case["secret"], now=at(case["now"]))  # noqa: E731, B023
                if case["error"] is None:
                    self.assertEqual(call(), json.loads(case["payload"]))
                else:
                    with self.assertRaises(WebhookVerificationError) as raised:
                        call()
                    self.assertEqual(str(raised.exception), case["error"])


class Behaviour(unittest.TestCase):
    secret = VECTORS["signatures"][0]["secret"]

    def signed(self, body: bytes, at_seconds: int) -> Dict[str, str]:
        return {"webhook-id": "evt_1", "webhook-timestamp": str(at_seconds), "webhook-signature": sign_webhook(body, webhook_id="evt_1", timestamp=at_seconds, secret=self.secret)}

    def test_now_by_default(self) -> None:
        body = b'{"id":"evt_1","type":"order.placed"}'
        now = int(time.time())
        self.assertEqual(verify_webhook(body, self.signed(body, now), self.secret)["id"], "evt_1")
        with self.assertRaisesRegex(WebhookVerificationError, "tolerance"):
            verify_webhook(body, self.signed(body, now - 600), self.secret)
        self.assertEqual(verify_webhook(body, self.signed(body, now - 600), self.secret, tolerance=900)["id"], "evt_1")

    def test_str_payloads_and_http_server_headers(self) -> None:
        body = '{"id":"evt_1","type":"order.placed","data":{"note":"Olá"}}'
        now = int(time.time())
        headers = Message()
        for name, value in self.signed(body.encode("utf-8"), now).items():
            headers[name.title()] = value
        self.assertEqual(verify_webhook(body, headers, self.secret)["id"], "evt_1")
        self.assertEqual(verify_webhook(body.encode(), {k: [v] for k, v in self.signed(body.encode(), now).items()}, self.secret)["id"], "evt_1")  # type: ignore[arg-type]

    def test_a_secret_that_is_not_base64(self) -> None:
        body = b"{}"
        with self.assertRaisesRegex(WebhookVerificationError, "not a webhook key"):
            verify_webhook(body, self.signed(body, int(time.time())), "whsec_%%%")

    def test_exported_from_the_package(self) -> None:
        self.assertIs(convo.verify_webhook, verify_webhook)
        self.assertTrue(issubclass(convo.WebhookVerificationError, Exception))


if __name__ == "__main__":
    unittest.main()
