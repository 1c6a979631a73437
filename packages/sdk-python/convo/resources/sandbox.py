from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._request_sender import RequestOptions
from ._base import Resource

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._types import Message, SandboxInboundParams


class Sandbox(Resource):
    def inbound(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[SandboxInboundParams]) -> Message:
        """Simulates a message arriving from a contact (servers with the sandbox on only).
        The sender goes in `from_` (`from` on the wire): `from_={"phone": "+5511912345678"}`."""
        return self._request("sandbox.inbound", body=params, options=request_options)
