from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._pagination import Page
from .._request_sender import RequestOptions
from ._base import Resource

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._types import CreateOrderBody, ListOrdersQuery, Order, UpdateOrderBody


class Orders(Resource):
    def list(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListOrdersQuery]) -> Page[Order]:
        """Newest `placed_at` first. Filters: `contact_id`, `status`."""
        return self._paginate("orders.list", params, options=request_options)

    def create(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[CreateOrderBody]) -> Order:
        """Records an order; `total_amount` is computed and `number` assigned when not given."""
        return self._request("orders.create", body=params, options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> Order:
        return self._request("orders.retrieve", path={"id": id}, options=request_options)

    def update(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[UpdateOrderBody]) -> Order:
        """Moves the order to `status` (pending → paid → fulfilled; → cancelled; → refunded); emits `order.updated`."""
        return self._request("orders.update", path={"id": id}, body=params, options=request_options)
