"""A PEP 517 build backend of plain modules, from the standard library alone: a test project copies it in
(``backend-path``) and builds with ``--no-build-isolation`` whatever the venv holds. setuptools before 70.1
needs the ``wheel`` package for ``bdist_wheel``, which a venv the README's commands build does not have."""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from pathlib import Path
from typing import Any


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(wheel_directory: str, config_settings: Any = None, metadata_directory: Any = None) -> str:
    """``NAME-VERSION-py3-none-any.whl`` (``[project]``'s ``name = "..."`` and ``version = "..."``) of the folder's
    modules (every ``*.py`` but this one)."""
    text = Path("pyproject.toml").read_text()
    name, version = (re.search(rf'^{key} = "([^"]+)"$', text, re.MULTILINE).group(1) for key in ("name", "version"))  # type: ignore[union-attr]
    dist = f"{name}-{version}.dist-info"
    files = {p.name: p.read_bytes() for p in sorted(Path().glob("*.py")) if p.name != Path(__file__).name}
    files[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    files[f"{dist}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: inline_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel
