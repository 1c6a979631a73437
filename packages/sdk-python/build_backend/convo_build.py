"""A PEP 517 build backend in the standard library, for this package only.

Why not setuptools: pip's build isolation would fetch it from PyPI (impossible offline), and Python
3.12+ venvs no longer bundle it. This backend needs nothing, so `pip install packages/sdk-python`
works in any fresh venv without a network. It reads the `[project]` table of pyproject.toml and
packs `convo/` into a pure-Python wheel (or an sdist, or an editable wheel).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "convo"
# Fixed timestamps: the same sources always give the same archive.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _project() -> Dict[str, Any]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib  # pyright: ignore[reportMissingTypeStubs, reportMissingImports]
    except ImportError:  # Python < 3.11
        return parse_toml_subset(text)["project"]
    return tomllib.loads(text)["project"]  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


def parse_toml_subset(text: str) -> Dict[str, Any]:
    """The TOML this pyproject.toml uses: tables, strings, arrays of strings, inline tables of strings."""
    out: Dict[str, Any] = {}
    table = out
    lines = iter(text.splitlines())
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        header = re.fullmatch(r"\[([A-Za-z0-9_.-]+)\]", line)
        if header:
            table = out
            for part in header.group(1).split("."):
                table = table.setdefault(part, {})
            continue
        key, _, value = (part.strip() for part in line.partition("="))
        if value.startswith("[") and not _closed(value):
            for more in lines:
                value += " " + more.strip()
                if _closed(value):
                    break
        table[key.strip('"')] = _value(value)
    return out


def _closed(value: str) -> bool:
    return value.count("[") == value.count("]")


def _value(value: str) -> Any:
    value = value.strip()
    if value.startswith('"'):
        return value[1:-1].encode().decode("unicode_escape")
    if value.startswith("["):
        return re.findall(r'"((?:[^"\\]|\\.)*)"', value)
    if value.startswith("{"):
        return dict(re.findall(r'([A-Za-z0-9_-]+)\s*=\s*"((?:[^"\\]|\\.)*)"', value))
    if value in ("true", "false"):
        return value == "true"
    return value


def _names() -> Tuple[str, str]:
    project = _project()
    return re.sub(r"[-_.]+", "_", project["name"]).lower(), project["version"]


def _metadata() -> str:
    project = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project.get('description', '')}",
        f"Requires-Python: {project['requires-python']}",
    ]
    license_ = project.get("license")
    if isinstance(license_, dict) and "text" in license_:
        lines.append(f"License: {license_['text']}")
    lines.extend(f"Classifier: {c}" for c in project.get("classifiers", []))
    lines.extend(f"Requires-Dist: {d}" for d in project.get("dependencies", []))
    readme = project.get("readme")
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        return "\n".join(lines) + "\n\n" + (ROOT / readme).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n"


def _package_files() -> List[Path]:
    return sorted(p for p in (ROOT / PACKAGE).rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".typed"))


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory: str, files: List[Tuple[str, bytes]]) -> str:
    name, version = _names()
    dist_info = f"{name}-{version}.dist-info"
    wheel_name = f"{name}-{version}-py3-none-any.whl"
    files = [
        *files,
        (f"{dist_info}/METADATA", _metadata().encode("utf-8")),
        (f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: convo_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        (f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode()),
    ]
    record = "\n".join([*(_record_line(n, d) for n, d in files), f"{dist_info}/RECORD,,"]) + "\n"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as archive:
        for entry_name, data in [*files, (f"{dist_info}/RECORD", record.encode())]:
            info = zipfile.ZipInfo(entry_name, ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return wheel_name


# -- PEP 517 / PEP 660 hooks ------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[Mapping[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, [(p.relative_to(ROOT).as_posix(), p.read_bytes()) for p in _package_files()])


def build_editable(wheel_directory: str, config_settings: Optional[Mapping[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    """A wheel whose .pth file puts this directory on sys.path: edits take effect without reinstalling."""
    name, _ = _names()
    return _write_wheel(wheel_directory, [(f"{name}.pth", f"{ROOT}\n".encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[Mapping[str, Any]] = None) -> str:
    name, version = _names()
    base = f"{name}-{version}"
    sources = [ROOT / "pyproject.toml", ROOT / "README.md", ROOT / "build_backend" / "convo_build.py", *_package_files()]
    members = [(f"{base}/{p.relative_to(ROOT).as_posix()}", p.read_bytes()) for p in sources]
    members.append((f"{base}/PKG-INFO", _metadata().encode("utf-8")))
    sdist_name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, sdist_name), "w:gz", format=tarfile.PAX_FORMAT) as archive:
        for member_name, data in members:
            info = tarfile.TarInfo(member_name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 315532800  # 1980-01-01
            archive.addfile(info, io.BytesIO(data))
    return sdist_name
