from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._pagination import Page
from .._request_sender import RequestOptions
from ._base import Resource

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._types import ListTagsQuery, Tag, UpdateTagBody


class Tags(Resource):
    def list(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListTagsQuery]) -> Page[Tag]:
        """Tags in use, by name, with their contact counts."""
        return self._paginate("tags.list", params, options=request_options)

    def update(self, tag: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[UpdateTagBody]) -> Tag:
        """Renames a tag on every contact (merging into the new name when it exists)."""
        return self._request("tags.update", path={"tag": tag}, body=params, options=request_options)

    def delete(self, tag: str, *, request_options: Optional[RequestOptions] = None) -> None:
        """Removes a tag from every contact."""
        self._request("tags.delete", path={"tag": tag}, options=request_options)
