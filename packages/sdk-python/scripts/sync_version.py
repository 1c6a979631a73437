"""Writes the version of package.json (the changesets `fixed` group's) into pyproject.toml and
convo/__init__.py. Run by `changeset version` through the root `version-packages` script and by the
package's `version` lifecycle; `--check` exits 1 when the three disagree."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
PYPROJECT = PACKAGE_DIR / "pyproject.toml"
INIT = PACKAGE_DIR / "convo" / "__init__.py"

PYPROJECT_VERSION = re.compile(r'^(version\s*=\s*")([^"]*)(")', re.MULTILINE)
INIT_VERSION = re.compile(r'^(__version__\s*=\s*")([^"]*)(")', re.MULTILINE)


def versions() -> "dict[str, str]":
    out = {"package.json": json.loads((PACKAGE_DIR / "package.json").read_text(encoding="utf-8"))["version"]}
    for path, pattern in ((PYPROJECT, PYPROJECT_VERSION), (INIT, INIT_VERSION)):
        match = pattern.search(path.read_text(encoding="utf-8"))
        out[path.relative_to(PACKAGE_DIR).as_posix()] = match.group(2) if match else "(none)"
    return out


def python_version(npm_version: str) -> str:
    """npm's `1.2.0-rc.1` is PEP 440's `1.2.0rc1` (as are alpha and beta); a plain version is the same."""
    match = re.fullmatch(r"(\d+\.\d+\.\d+)(?:-(alpha|beta|rc)\.?(\d+))?", npm_version)
    if not match:
        raise SystemExit(f"package.json version {npm_version!r} has no Python equivalent")
    release, pre, number = match.groups()
    return release + ({"alpha": "a", "beta": "b", "rc": "rc"}[pre] + number if pre else "")


def main(argv: "list[str]") -> int:
    target = python_version(versions()["package.json"])
    if "--check" in argv:
        found = versions()
        wrong = {name: v for name, v in found.items() if name != "package.json" and v != target}
        if wrong:
            print(f"versions disagree with package.json ({target}): {wrong}; run `python3 scripts/sync_version.py`", file=sys.stderr)
            return 1
        return 0
    for path, pattern in ((PYPROJECT, PYPROJECT_VERSION), (INIT, INIT_VERSION)):
        text = path.read_text(encoding="utf-8")
        path.write_text(pattern.sub(lambda m: m.group(1) + target + m.group(3), text, count=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
