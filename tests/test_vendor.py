"""The vendored SGLang files are an unmodified copy of the shared reference data."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from tests.support.paths import REPO

VENDORED = REPO / "tests" / "vendor" / "sglang-data"
SHARED = REPO.parent / "shared" / "sglang-data"


def _files(root: Path) -> list[Path]:
    """The files under ``root``, but Python's bytecode caches (importing the vendored code writes them)."""
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def test_vendored_copy_equals_the_shared_reference():
    if not SHARED.is_dir():
        pytest.skip("../shared/sglang-data is not present: nothing to compare the vendored copy with")
    shared = _files(SHARED)
    assert _files(VENDORED) == shared
    _, mismatch, errors = filecmp.cmpfiles(SHARED, VENDORED, [str(p) for p in shared], shallow=False)
    assert mismatch == [] and errors == []
