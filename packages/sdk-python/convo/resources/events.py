from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._pagination import Page
from .._request_sender import RequestOptions
from ._base import Resource

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._types import Event, ListEventsQuery


class Events(Resource):
    def list(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListEventsQuery]) -> Page[Event]:
        """The account's events of the last 30 days, newest first; filter `type`."""
        return self._paginate("events.list", params, options=request_options)
