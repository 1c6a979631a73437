"""Pages: one page's fields, and lazy iteration over every record across pages."""

from __future__ import annotations

import unittest

import convo

from .support import fake_client, page


def records(start: int, count: int) -> "list[dict[str, str]]":
    return [{"id": f"conv_{i}"} for i in range(start, start + count)]


class Pages(unittest.TestCase):
    def test_a_list_returns_its_first_page(self) -> None:
        client, transport, _ = fake_client(page(records(0, 2), total=5, limit=2))
        first = client.conversations.list(status="active", limit=2)
        self.assertIsInstance(first, convo.Page)
        self.assertEqual((first.total, first.limit, first.offset, first.has_more), (5, 2, 0, True))
        self.assertEqual([c["id"] for c in first.data], ["conv_0", "conv_1"])
        self.assertEqual(first.to_dict()["total"], 5)
        self.assertEqual(len(transport.requests), 1)

    def test_iterating_walks_every_page_lazily_with_the_same_filters(self) -> None:
        client, transport, _ = fake_client(
            page(records(0, 2), total=5, limit=2),
            page(records(2, 2), total=5, limit=2, offset=2),
            page(records(4, 1), total=5, limit=2, offset=4),
        )
        pages = client.conversations.list(status="active", limit=2)
        walked = iter(pages)
        self.assertEqual([next(walked)["id"], next(walked)["id"]], ["conv_0", "conv_1"])
        self.assertEqual(len(transport.requests), 1, "the next page is fetched only when reached")
        self.assertEqual([c["id"] for c in walked], ["conv_2", "conv_3", "conv_4"])
        self.assertEqual([r.query for r in transport.requests], [
            {"status": "active", "limit": "2"},
            {"status": "active", "limit": "2", "offset": "2"},
            {"status": "active", "limit": "2", "offset": "4"},
        ])

    def test_auto_paging_iter_starts_at_the_callers_offset(self) -> None:
        client, transport, _ = fake_client(page(records(3, 2), total=6, limit=2, offset=3), page(records(5, 1), total=6, limit=2, offset=5))
        ids = [c["id"] for c in client.contacts.list(offset=3, limit=2).auto_paging_iter()]
        self.assertEqual(ids, ["conv_3", "conv_4", "conv_5"])
        self.assertEqual(transport.requests[1].query, {"offset": "5", "limit": "2"})

    def test_next_page_and_the_last_page(self) -> None:
        client, _, _ = fake_client(page(records(0, 1), total=2, limit=1), page(records(1, 1), total=2, limit=1, offset=1))
        first = client.tags.list(limit=1)
        second = first.next_page()
        assert second is not None
        self.assertEqual((second.offset, second.has_more, second.next_page()), (1, False, None))

    def test_an_empty_page_ends_the_walk_even_if_has_more_says_otherwise(self) -> None:
        client, transport, _ = fake_client(page([], total=3, offset=3))
        self.assertEqual(list(client.events.list(offset=3)), [])
        self.assertEqual(len(transport.requests), 1)

    def test_sub_resource_lists_keep_their_path(self) -> None:
        client, transport, _ = fake_client(page(records(0, 1), total=2, limit=1), page(records(1, 1), total=2, limit=1, offset=1))
        self.assertEqual(len(list(client.workflows.runs("wf_1", limit=1))), 2)
        self.assertEqual({r.path for r in transport.requests}, {"/v1/workflows/wf_1/runs"})


if __name__ == "__main__":
    unittest.main()
