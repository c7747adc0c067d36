"""Fixtures shared by the whole test suite."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SGLANG_DATA = REPO.parent / "shared" / "sglang-data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def sglang_data() -> Path:
    """SGLang's own baseline files (../shared/sglang-data); the test skips where they are absent."""
    if not SGLANG_DATA.is_dir():
        pytest.skip("../shared/sglang-data is not present")
    return SGLANG_DATA
