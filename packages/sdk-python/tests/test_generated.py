"""convo/_types.py and convo/_routes.py are what the generator makes from the served OpenAPI document now."""

from __future__ import annotations

import importlib.util
import unittest

from .support import PACKAGE_DIR, require_openapi

spec = importlib.util.spec_from_file_location("generate_types", PACKAGE_DIR / "scripts" / "generate_types.py")
assert spec is not None and spec.loader is not None
generator = importlib.util.module_from_spec(spec)
spec.loader.exec_module(  # pyright: ignore[reportAttributeAccessIssue]
    generator)


class Generated(unittest.TestCase):
    def test_the_committed_types_match_the_served_document(self) -> None:
        types_text, routes_text = generator.generate(require_openapi())
        stale = "out of date: run `pnpm --filter @convo/sdk-python generate`"
        self.assertTrue((PACKAGE_DIR / "convo" / "_types.py").read_text(encoding="utf-8") == types_text, f"convo/_types.py {stale}")
        self.assertTrue((PACKAGE_DIR / "convo" / "_routes.py").read_text(encoding="utf-8") == routes_text, f"convo/_routes.py {stale}")

    def test_every_schema_has_a_type(self) -> None:
        import convo.types

        document = require_openapi()
        missing = set(document["components"]["schemas"]) - set(convo.types.__all__)
        self.assertFalse(missing)


if __name__ == "__main__":
    unittest.main()
