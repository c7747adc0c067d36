"""The vendored SGLang files are an unmodified copy of the shared reference data."""

from __future__ import annotations

import filecmp

import pytest

from tests.support.paths import REPO

VENDORED = REPO / "tests" / "vendor" / "sglang-data"
SHARED = REPO.parent / "shared" / "sglang-data"


def test_vendored_copy_equals_the_shared_reference():
    if not SHARED.is_dir():
        pytest.skip("../shared/sglang-data is not present: nothing to compare the vendored copy with")
    shared = sorted(p.relative_to(SHARED) for p in SHARED.rglob("*") if p.is_file())
    vendored = sorted(p.relative_to(VENDORED) for p in VENDORED.rglob("*") if p.is_file())
    assert vendored == shared
    _, mismatch, errors = filecmp.cmpfiles(SHARED, VENDORED, [str(p) for p in shared], shallow=False)
    assert mismatch == [] and errors == []
