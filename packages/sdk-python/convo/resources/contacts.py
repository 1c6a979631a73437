from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._pagination import Page
from .._request_sender import RequestOptions, RequestSender
from ._base import Resource

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._types import Contact, CreateContactBody, ListContactsQuery, UpdateContactBody


class ContactTags(Resource):
    def add(self, contact_id: str, tag: str, *, request_options: Optional[RequestOptions] = None) -> Contact:
        """Attaches a tag; attaching one the contact has changes nothing."""
        return self._request("contacts.tags.add", path={"id": contact_id}, body={"tag": tag}, options=request_options)

    def remove(self, contact_id: str, tag: str, *, request_options: Optional[RequestOptions] = None) -> Contact:
        """Removes a tag (NotFoundError when the contact does not have it)."""
        return self._request("contacts.tags.remove", path={"id": contact_id, "tag": tag}, options=request_options)


class Contacts(Resource):
    tags: ContactTags

    def __init__(self, sender: RequestSender) -> None:
        super().__init__(sender)
        self.tags = ContactTags(sender)

    def list(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListContactsQuery]) -> Page[Contact]:
        """Newest first. Filters: `search` (name, email, phone digits), `tag`."""
        return self._paginate("contacts.list", params, options=request_options)

    def create(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[CreateContactBody]) -> Contact:
        return self._request("contacts.create", body=params, options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> Contact:
        return self._request("contacts.retrieve", path={"id": id}, options=request_options)

    def update(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[UpdateContactBody]) -> Contact:
        """Partial update: `email=None` clears it, `tags` replaces the set."""
        return self._request("contacts.update", path={"id": id}, body=params, options=request_options)

    def delete(self, id: str, *, request_options: Optional[RequestOptions] = None) -> None:
        """Deletes the contact with its conversations and messages; its orders stay."""
        self._request("contacts.delete", path={"id": id}, options=request_options)
