from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._pagination import Page
from .._request_sender import RequestOptions
from ._base import Resource

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._types import (
        CreatedWebhookEndpoint,
        CreateWebhookEndpointBody,
        DeliveryReplay,
        ReplayDeliveriesBody,
        ListDeliveriesQuery,
        ListWebhookEndpointsQuery,
        UpdateWebhookEndpointBody,
        WebhookDelivery,
        WebhookEndpoint,
    )


class WebhookEndpoints(Resource):
    def list(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListWebhookEndpointsQuery]) -> Page[WebhookEndpoint]:
        return self._paginate("webhookEndpoints.list", params, options=request_options)

    def create(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[CreateWebhookEndpointBody]) -> CreatedWebhookEndpoint:
        """Registers an https URL for event types (or `["*"]`); with `secret` when it made the account's webhook key."""
        return self._request("webhookEndpoints.create", body=params, options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> WebhookEndpoint:
        return self._request("webhookEndpoints.retrieve", path={"id": id}, options=request_options)

    def update(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[UpdateWebhookEndpointBody]) -> WebhookEndpoint:
        """Changes url, events, description or status (`enabled` re-enables)."""
        return self._request("webhookEndpoints.update", path={"id": id}, body=params, options=request_options)

    def delete(self, id: str, *, request_options: Optional[RequestOptions] = None) -> None:
        self._request("webhookEndpoints.delete", path={"id": id}, options=request_options)

    def deliveries(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListDeliveriesQuery]) -> Page[WebhookDelivery]:
        """The endpoint's deliveries, newest first, each with its attempts."""
        return self._paginate("webhookEndpoints.listDeliveries", params, path={"id": id}, options=request_options)

    def retry_delivery(self, id: str, delivery_id: str, *, request_options: Optional[RequestOptions] = None) -> WebhookDelivery:
        """Sends a delivery again now (also for a disabled endpoint)."""
        return self._request("webhookEndpoints.retryDelivery", path={"id": id, "delivery_id": delivery_id}, options=request_options)

    def test(self, id: str, *, request_options: Optional[RequestOptions] = None) -> WebhookDelivery:
        """Sends a signed `ping` to the endpoint now; returns its delivery and the attempt made."""
        return self._request("webhookEndpoints.test", path={"id": id}, options=request_options)

    def replay(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ReplayDeliveriesBody]) -> DeliveryReplay:
        """Queues again every delivery of [since, until) with `status` (`failed` by default); says how many."""
        return self._request("webhookEndpoints.replay", path={"id": id}, body=params, options=request_options)
