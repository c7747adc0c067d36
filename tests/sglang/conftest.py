"""Fixtures for the SGLang tests: the vendored 0.5.23 files, loaded once per session."""

from __future__ import annotations

import pytest

from pytest_diffperf.cases import CaseFile, load_case_file
from tests.support.sglang import SRC, Harness, available, load_harness


@pytest.fixture(scope="session")
def vendored() -> None:
    if not available():
        pytest.skip("the vendored SGLang files (tests/vendor/sglang-data) are absent")


@pytest.fixture(scope="session")
def harness(vendored) -> Harness:
    """SGLang's harness modules of 0.5.23 as on an H100 (with the case files they import)."""
    return load_harness("h100")


@pytest.fixture(scope="session")
def h100_file(vendored) -> CaseFile:
    """SGLang 0.5.23's H100 suites converted by the plugin (the public path: cases.load_case_file)."""
    return load_case_file(SRC)


@pytest.fixture(scope="session")
def sglang_cases(harness) -> dict:
    """SGLang's own DiffusionTestCase objects of the H100 suites, by id."""
    module = harness.gpu_cases
    cases = [c for _file, group in module.PARAMETRIZED_CASE_GROUPS["1-gpu"] for c in group]
    cases += [c for _file, group in module.PARAMETRIZED_CASE_GROUPS["2-gpu"] for c in group]
    cases += module.MINIMAX_H3_FOUR_GPU_H100_CASES
    return {c.id: c for c in cases}
