"""package.json (the changesets group's version), pyproject.toml and convo.__version__ agree."""

from __future__ import annotations

import json
import re
import unittest

import importlib.util

import convo

from .support import PACKAGE_DIR, REPO_ROOT

spec = importlib.util.spec_from_file_location("sync_version", PACKAGE_DIR / "scripts" / "sync_version.py")
assert spec is not None and spec.loader is not None
sync_version = importlib.util.module_from_spec(spec)
spec.loader.exec_module(  # pyright: ignore[reportAttributeAccessIssue]
    sync_version)


class Version(unittest.TestCase):
    def test_all_three_agree(self) -> None:
        npm = sync_version.python_version(json.loads((PACKAGE_DIR / "package.json").read_text(encoding="utf-8"))["version"])
        pyproject = re.search(r'^version\s*=\s*"([^"]+)"', (PACKAGE_DIR / "pyproject.toml").read_text(encoding="utf-8"), re.MULTILINE)
        assert pyproject is not None
        self.assertEqual((pyproject.group(1), convo.__version__), (npm, npm), "run `python3 scripts/sync_version.py`")
        self.assertEqual(sync_version.main(["--check"]), 0)

    def test_prereleases_take_their_pep_440_form(self) -> None:
        self.assertEqual(sync_version.python_version("1.2.0"), "1.2.0")
        self.assertEqual(sync_version.python_version("1.2.0-rc.1"), "1.2.0rc1")
        self.assertEqual(sync_version.python_version("1.2.0-beta.3"), "1.2.0b3")

    def test_the_package_is_in_the_fixed_group_with_core_sdk_and_cli(self) -> None:
        config = json.loads((REPO_ROOT / ".changeset" / "config.json").read_text(encoding="utf-8"))
        group = next(g for g in config["fixed"] if "@convo/sdk" in g)
        self.assertIn("@convo/sdk-python", group)
        sdk = json.loads((REPO_ROOT / "packages" / "sdk" / "package.json").read_text(encoding="utf-8"))["version"]
        self.assertEqual(convo.__version__, sdk, "the Python SDK carries the TypeScript SDK's version")


if __name__ == "__main__":
    unittest.main()
