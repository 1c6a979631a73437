from __future__ import annotations

import keyword
from typing import Any, Dict, Mapping, Optional, TypeVar

from .._pagination import Page
from .._request_sender import RequestOptions, RequestSender

T = TypeVar("T")


class Resource:
    """Base of the resource classes: every method is one operation of the endpoint table."""

    def __init__(self, sender: RequestSender) -> None:
        self._sender = sender

    def _request(
        self,
        operation_id: str,
        *,
        path: Optional[Mapping[str, str]] = None,
        body: Optional[Mapping[str, Any]] = None,
        options: Optional[RequestOptions] = None,
    ) -> Any:
        return self._sender.send(operation_id, path=path, body=wire(body) if body is not None else None, options=options)

    def _paginate(
        self,
        operation_id: str,
        query: Mapping[str, Any],
        *,
        path: Optional[Mapping[str, str]] = None,
        options: Optional[RequestOptions] = None,
    ) -> Page[Any]:
        """A list operation as a Page: the caller's offset first, then the offsets that follow."""

        def fetch(offset: Optional[int]) -> Page[Any]:
            page_query = dict(query) if offset is None else {**query, "offset": offset}
            return Page(self._sender.send(operation_id, path=path, query=page_query, options=options), fetch)

        return fetch(None)


def wire(params: Mapping[str, Any]) -> Dict[str, Any]:
    """Keyword arguments as the wire names them: `from_` (a Python keyword's spelling) is `from`."""
    return {(name[:-1] if name.endswith("_") and keyword.iskeyword(name[:-1]) else name): value for name, value in params.items()}
