"""The package as users get it: a wheel built offline, installed into a fresh venv, running the
README's quick start against the real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import unittest
import zipfile
from pathlib import Path

import convo

from .support import PACKAGE_DIR, e2e_settings


def quick_start() -> str:
    readme = (PACKAGE_DIR / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the README has a Python quick start"
    return match.group(1)


class Package(unittest.TestCase):
    tmp: tempfile.TemporaryDirectory[str]
    venv_python: Path
    wheel: Path

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory(prefix="convo-sdk-python-")
        root = Path(cls.tmp.name)
        subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
        cls.venv_python = root / "venv" / ("Scripts" if os.name == "nt" else "bin") / "python"
        env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        # No network: pip's build isolation installs the backend's requirements, and it has none.
        subprocess.run([str(cls.venv_python), "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(root / "dist"), str(PACKAGE_DIR)], check=True, env=env)
        (cls.wheel,) = (root / "dist").glob("convo_sdk-*.whl")
        subprocess.run([str(cls.venv_python), "-m", "pip", "install", "-q", str(cls.wheel)], check=True, env=env)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def test_the_wheel_holds_the_package_its_types_and_its_metadata(self) -> None:
        self.assertEqual(self.wheel.name, f"convo_sdk-{convo.__version__}-py3-none-any.whl")
        with zipfile.ZipFile(self.wheel) as archive:
            names = set(archive.namelist())
            metadata = archive.read(f"convo_sdk-{convo.__version__}.dist-info/METADATA").decode()
        self.assertTrue({"convo/__init__.py", "convo/py.typed", "convo/_types.py", "convo/resources/contacts.py"} <= names)
        self.assertFalse([n for n in names if n.startswith(("tests/", "scripts/")) or "__pycache__" in n])
        self.assertIn("Name: convo-sdk\n", metadata)
        self.assertIn("Requires-Python: >=3.9\n", metadata)
        self.assertNotIn("Requires-Dist", metadata)

    def test_the_readme_quick_start_runs_from_the_installed_wheel(self) -> None:
        settings = e2e_settings()
        root = Path(self.tmp.name)
        (root / "quickstart.py").write_text(quick_start(), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.update(CONVO_API_KEY=settings["api_key"], CONVO_BASE_URL=settings["base_url"])
        where = subprocess.run([str(self.venv_python), "-c", "import convo; print(convo.__file__)"], cwd=root, env=env, check=True, capture_output=True, text=True)
        self.assertTrue(where.stdout.startswith(str(root / "venv")), where.stdout)
        run = lambda: subprocess.run([str(self.venv_python), "quickstart.py"], cwd=root, env=env, capture_output=True, text=True, timeout=60)  # noqa: E731
        first = run()
        self.assertEqual(first.returncode, 0, first.stderr)
        result = run()  # the second run finds the contact the first created
        self.assertEqual(result.returncode, 0, result.stderr)
        client = convo.Client(api_key=settings["api_key"], base_url=settings["base_url"])
        active = [c["id"] for c in client.conversations.list(status="active")]
        printed = [line.split(" ", 1)[0] for line in result.stdout.splitlines()]
        self.assertEqual(printed, active, "it lists every active conversation of the demo account")
        self.assertTrue(active)
        self.assertIn("Ana Souza", result.stdout)


if __name__ == "__main__":
    unittest.main()
