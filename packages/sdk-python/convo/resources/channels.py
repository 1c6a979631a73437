from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._pagination import Page
from .._request_sender import RequestOptions
from ._base import Resource

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._types import Channel, CreateChannelBody, ListChannelsQuery, ListTemplatesQuery, UpdateChannelBody, WhatsAppTemplate


class Channels(Resource):
    def list(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListChannelsQuery]) -> Page[Channel]:
        return self._paginate("channels.list", params, options=request_options)

    def create(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[CreateChannelBody]) -> Channel:
        """Connects a WhatsApp number, a Facebook Page or an Instagram account; enter the answer's
        `webhook_url` and `verify_token` in the Meta app."""
        return self._request("channels.create", body=params, options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> Channel:
        return self._request("channels.retrieve", path={"id": id}, options=request_options)

    def update(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[UpdateChannelBody]) -> Channel:
        """Renames, rotates `access_token` or `app_secret`, disables or re-enables (`status="active"`)."""
        return self._request("channels.update", path={"id": id}, body=params, options=request_options)

    def list_templates(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListTemplatesQuery]) -> Page[WhatsAppTemplate]:
        """A WhatsApp channel's message templates from the Graph API (its `business_account_id`'s), by name then language."""
        return self._paginate("channels.listTemplates", params, path={"id": id}, options=request_options)

    def delete(self, id: str, *, request_options: Optional[RequestOptions] = None) -> None:
        self._request("channels.delete", path={"id": id}, options=request_options)
