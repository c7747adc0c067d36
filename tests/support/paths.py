"""Where the test data is: the repository, the fixture layouts, SGLang's vendored files."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
SGLANG_DATA = REPO / "tests" / "vendor" / "sglang-data"  # SGLang's own files, unmodified (see its README)
LAYOUT = DATA / "sglang_layout"  # perf_baselines/<platform>.json + fragments + thresholds
SINGLE = DATA / "single_layout"  # perf_baselines.json (legacy flat tolerances)
