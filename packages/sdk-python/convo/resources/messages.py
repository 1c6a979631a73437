from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._request_sender import RequestOptions
from ._base import Resource

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._types import Message, SendMessageBody


class Messages(Resource):
    def send(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[SendMessageBody]) -> Message:
        """Sends a message into a conversation (outbound): `content` for text, a WhatsApp `template`, or `media`
        (`{"file_id": …}` or `{"url": …}`) for an image, video, audio or document, with `content` as its caption."""
        return self._request("messages.send", body=params, options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> Message:
        """Any message of the account, with its current delivery status."""
        return self._request("messages.retrieve", path={"id": id}, options=request_options)
