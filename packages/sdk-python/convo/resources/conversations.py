from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._pagination import Page
from .._request_sender import RequestOptions
from ._base import Resource

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._types import (
        Conversation,
        CreateConversationBody,
        ListConversationsQuery,
        ListMessagesQuery,
        Message,
        UpdateConversationBody,
    )


class Conversations(Resource):
    def list(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListConversationsQuery]) -> Page[Conversation]:
        """Most recent activity first. Filters: `status`, `platform`, `search`."""
        return self._paginate("conversations.list", params, options=request_options)

    def create(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[CreateConversationBody]) -> Conversation:
        return self._request("conversations.create", body=params, options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> Conversation:
        return self._request("conversations.retrieve", path={"id": id}, options=request_options)

    def update(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[UpdateConversationBody]) -> Conversation:
        """Changes the status: active → resolved | archived, resolved → active | archived."""
        return self._request("conversations.update", path={"id": id}, body=params, options=request_options)

    def list_messages(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListMessagesQuery]) -> Page[Message]:
        """The conversation's messages, oldest first."""
        return self._paginate("conversations.listMessages", params, path={"id": id}, options=request_options)
