"""A page of a list, which also walks every record from it on, fetching further pages lazily."""

from __future__ import annotations

from typing import Any, Callable, Dict, Generic, Iterator, List, Mapping, Optional, TypeVar

T = TypeVar("T")


class Page(Generic[T]):
    """One page of a list (`data`, `total`, `limit`, `offset`, `has_more`, as the wire has them).

    Iterating a page yields every record from this page on, fetching the next pages as needed:

        for conversation in client.conversations.list(status="active"):
            ...
    """

    data: List[T]
    """The records of this page only."""
    total: int
    """Records in the whole list (with its filters)."""
    limit: int
    offset: int
    has_more: bool

    def __init__(self, envelope: Mapping[str, Any], fetch: Callable[[int], Page[T]]) -> None:
        self._envelope: Dict[str, Any] = dict(envelope)
        self._fetch = fetch
        self.data = list(envelope["data"])
        self.total = int(envelope["total"])
        self.limit = int(envelope["limit"])
        self.offset = int(envelope["offset"])
        self.has_more = bool(envelope["has_more"])

    def next_page(self) -> Optional[Page[T]]:
        """The page after this one, or None when this is the last."""
        if not self.has_more or not self.data:
            return None
        return self._fetch(self.offset + len(self.data))

    def auto_paging_iter(self) -> Iterator[T]:
        """Every record from this page on, across pages (fetched one at a time, when reached)."""
        page: Optional[Page[T]] = self
        while page is not None:
            yield from page.data
            page = page.next_page()

    def __iter__(self) -> Iterator[T]:
        return self.auto_paging_iter()

    def to_dict(self) -> Dict[str, Any]:
        """The page as the API sent it."""
        return dict(self._envelope)

    def __repr__(self) -> str:
        return f"<Page offset={self.offset} limit={self.limit} records={len(self.data)} total={self.total} has_more={self.has_more}>"
