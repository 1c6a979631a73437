"""Every operation of the endpoint table is a method of the client, the one the TypeScript SDK has."""

from __future__ import annotations

import re
import unittest
from typing import Any, Callable, Dict

import convo
from convo import HttpResponse
from convo._routes import ROUTES

from .support import REPO_ROOT, fake_client, page, require_openapi, respond

# One call per operation, with "P1"/"P2" for its path parameters.
CALLS: Dict[str, Callable[[convo.Client], Any]] = {
    "conversations.list": lambda c: c.conversations.list(status="active"),
    "conversations.create": lambda c: c.conversations.create(contact_id="ct_1", platform="whatsapp"),
    "conversations.retrieve": lambda c: c.conversations.retrieve("P1"),
    "conversations.update": lambda c: c.conversations.update("P1", status="resolved"),
    "conversations.listMessages": lambda c: c.conversations.list_messages("P1", limit=5),
    "messages.send": lambda c: c.messages.send(conversation_id="conv_1", content="Hi"),
    "messages.retrieve": lambda c: c.messages.retrieve("P1"),
    "files.create": lambda c: c.files.create(file=b"%PDF-", filename="receipt.pdf"),
    "files.retrieve": lambda c: c.files.retrieve("P1"),
    "files.content": lambda c: c.files.content("P1"),
    "contacts.list": lambda c: c.contacts.list(tag="vip"),
    "contacts.create": lambda c: c.contacts.create(phone="+5511912345678"),
    "contacts.retrieve": lambda c: c.contacts.retrieve("P1"),
    "contacts.update": lambda c: c.contacts.update("P1", name="Ana"),
    "contacts.delete": lambda c: c.contacts.delete("P1"),
    "contacts.tags.add": lambda c: c.contacts.tags.add("P1", "vip"),
    "contacts.tags.remove": lambda c: c.contacts.tags.remove("P1", "P2"),
    "tags.list": lambda c: c.tags.list(),
    "tags.update": lambda c: c.tags.update("P1", name="gold"),
    "tags.delete": lambda c: c.tags.delete("P1"),
    "orders.list": lambda c: c.orders.list(status="paid"),
    "orders.create": lambda c: c.orders.create(contact_id="ct_1", currency="BRL", items=[{"name": "Mug", "quantity": 1, "unit_amount": 100}]),
    "orders.retrieve": lambda c: c.orders.retrieve("P1"),
    "orders.update": lambda c: c.orders.update("P1", status="paid"),
    "workflows.list": lambda c: c.workflows.list(),
    "workflows.create": lambda c: c.workflows.create(name="Welcome", steps=[{"type": "add_tag", "tag": "new"}]),
    "workflows.retrieve": lambda c: c.workflows.retrieve("P1"),
    "workflows.trigger": lambda c: c.workflows.trigger("P1", contact_id="ct_1", data={"order": "1001"}),
    "workflows.listRuns": lambda c: c.workflows.runs("P1", status="succeeded"),
    "workflows.update": lambda c: c.workflows.update("P1", enabled=False),
    "workflows.delete": lambda c: c.workflows.delete("P1"),
    "workflows.retrieveRun": lambda c: c.workflows.retrieve_run("P1", "P2"),
    "workflows.cancelRun": lambda c: c.workflows.cancel_run("P1", "P2"),
    "events.list": lambda c: c.events.list(type="order.placed"),
    "events.stream": lambda c: next(c.events.stream(type=["message.received", "order.placed"])),
    "webhookEndpoints.list": lambda c: c.webhook_endpoints.list(),
    "webhookEndpoints.create": lambda c: c.webhook_endpoints.create(url="https://example.com/hook", events=["*"]),
    "webhookEndpoints.retrieve": lambda c: c.webhook_endpoints.retrieve("P1"),
    "webhookEndpoints.update": lambda c: c.webhook_endpoints.update("P1", status="disabled"),
    "webhookEndpoints.delete": lambda c: c.webhook_endpoints.delete("P1"),
    "webhookEndpoints.listDeliveries": lambda c: c.webhook_endpoints.deliveries("P1", status="failed"),
    "webhookEndpoints.retryDelivery": lambda c: c.webhook_endpoints.retry_delivery("P1", "P2"),
    "webhookEndpoints.test": lambda c: c.webhook_endpoints.test("P1"),
    "webhookEndpoints.replay": lambda c: c.webhook_endpoints.replay("P1", since="2026-11-01T00:00:00Z", until="2026-11-02T00:00:00Z"),
    "channels.list": lambda c: c.channels.list(platform="whatsapp"),
    "channels.create": lambda c: c.channels.create(platform="whatsapp", external_id="1065", access_token="t", app_secret="s"),
    "channels.retrieve": lambda c: c.channels.retrieve("P1"),
    "channels.update": lambda c: c.channels.update("P1", name="Support"),
    "channels.listTemplates": lambda c: c.channels.list_templates("P1", status="APPROVED"),
    "channels.delete": lambda c: c.channels.delete("P1"),
    "sandbox.inbound": lambda c: c.sandbox.inbound(platform="whatsapp", from_={"phone": "+5511912345678"}, content="Oi"),
}


def resolve(client: convo.Client, method_path: str) -> Any:
    target: Any = client
    for part in method_path.split("."):
        target = getattr(target, part)
    return target


def snake(name: str) -> str:
    return "delete" if name == "del" else re.sub(r"(?<!^)([A-Z])", lambda m: "_" + m.group(1).lower(), name)


class EveryOperation(unittest.TestCase):
    def test_every_operation_of_the_served_document_has_a_method(self) -> None:
        document = require_openapi()
        served = {
            operation["operationId"]
            for path, item in document["paths"].items()
            if path.startswith("/v1/")
            for method, operation in item.items()
            if method in ("get", "post", "patch", "put", "delete")
        }
        missing = served - set(convo.SDK_METHODS)
        self.assertFalse(missing, f"operations of the OpenAPI document without a Python method: {sorted(missing)}")
        self.assertEqual(set(convo.SDK_METHODS), served)
        self.assertEqual(set(ROUTES), served, "convo/_routes.py is out of date: run `pnpm --filter @convo/sdk-python generate`")

    def test_each_entry_names_a_method(self) -> None:
        client, _, _ = fake_client()
        for operation_id, method_path in convo.SDK_METHODS.items():
            self.assertTrue(callable(resolve(client, method_path)), f"{operation_id} → {method_path}")

    def test_the_methods_are_the_typescript_sdks_in_snake_case(self) -> None:
        source = (REPO_ROOT / "packages" / "sdk" / "src" / "operations.ts").read_text(encoding="utf-8")
        typescript = dict(re.findall(r"'([\w.]+)': '([\w.]+)'", source))
        self.assertTrue(typescript)
        expected = {operation_id: ".".join(snake(part) for part in method.split(".")) for operation_id, method in typescript.items()}
        self.assertEqual(convo.SDK_METHODS, expected)

    def test_each_method_sends_its_operation(self) -> None:
        self.assertEqual(set(CALLS), set(ROUTES), "a sample call for every operation")
        for operation_id, call in CALLS.items():
            route = ROUTES[operation_id]
            with self.subTest(operation_id):
                if route.status == 204:
                    reply = HttpResponse(204, {}, b"")
                elif route.stream:
                    reply = HttpResponse(200, {"content-type": "text/event-stream"}, b'id: evt_1\ndata: {"id": "x"}\n\n')
                elif operation_id.split(".")[-1].startswith("list") or operation_id in ("workflows.listRuns", "webhookEndpoints.listDeliveries"):
                    reply = page([{"id": "x"}], total=1)
                else:
                    reply = respond(route.status, {"id": "x"})
                client, transport, _ = fake_client(reply)
                call(client)
                (request,) = transport.requests
                self.assertEqual(request.method, route.method)
                self.assertEqual(request.path, "/v1" + route.path.replace("{id}", "P1").replace("{tag}", "P2" if "{id}" in route.path else "P1").replace("{delivery_id}", "P2").replace("{run_id}", "P2"))
                self.assertEqual("Idempotency-Key" in request.headers, route.method == "POST")


if __name__ == "__main__":
    unittest.main()
