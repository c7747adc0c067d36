"""`diffperf verify-sglang`'s judging check: each release's own validator against the plugin's verdict.

On the vendored releases every expressible H100 case is equal on every synthetic run (within limits,
each targeted check just over and just under, one of two requests over, no load or VRAM baseline,
no scenario); a copy whose validator is edited is reported different, with the first difference.
Every release from 0.5.6 to 0.5.23 is equal too (``tests.support.sglang_wheels``: ``DIFFPERF_SGLANG_WHEELS``,
else the wheels fetched once from the package index; skipped without one).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_diffperf._util.jsonfile import validate
from pytest_diffperf.cases import CaseFile
from pytest_diffperf.commands import verify_sglang_judging as judging
from pytest_diffperf.platforms import Platform
from pytest_diffperf.sglang import caselist, harness, standins
from pytest_diffperf.sglang.casefile import convert_lists
from pytest_diffperf.sglang.inference import PROBES
from pytest_diffperf.sglang.source import SERVER_DIR, locate
from tests.support.paths import SGLANG_DATA
from tests.support.sglang_wheels import release_trees

RELEASES = {v: SGLANG_DATA / f"v{v}" / "src" for v in ("0.5.12", "0.5.17", "0.5.23")}
EQUAL = {"0.5.12": (58, 4), "0.5.17": (64, 6), "0.5.23": (78, 7)}  # H100: equal, not expressible
pytestmark = pytest.mark.skipif(
    not all((p / SERVER_DIR / "test_server_utils.py").is_file() for p in RELEASES.values()),
    reason="the vendored SGLang harness files are absent",
)


def check(tree: Path, hardware: Platform = "h100") -> dict[str, str]:
    """The judging column of ``diffperf verify-sglang TREE`` (loaded as the command loads it)."""
    source = locate(tree)
    first = caselist.load(source, hardware)
    loaded = harness.load(source, hardware, table=first.table, assumed=standins.Assumption(PROBES[0]))
    lists = caselist.from_modules(source, hardware, loaded.modules, first)
    case_file = validate(CaseFile, convert_lists(lists, None, None), tree, "")
    ours = {c.id: c for c in case_file.cases}
    return judging.compare_all(loaded, [e.case for e in lists.select(None)], ours, hardware)


@pytest.mark.server
@pytest.mark.parametrize("version", sorted(RELEASES))
def test_every_expressible_case_of_a_vendored_release_is_judged_as_the_release_judges_it(version):
    results = check(RELEASES[version])
    equal, not_expressible = EQUAL[version]
    assert judging.summary(results) == f"{equal} equal, {not_expressible} not expressible"
    assert not judging.differs(results)
    # 0.5.23: load and memory figures just over/under (its ScenarioConfig has them), one of two requests over
    counts = {int(v.split("(")[1].split()[0]) for v in results.values() if v.startswith("equal")}
    assert counts == ({28, 29} if version == "0.5.23" else {16})


@pytest.mark.server
def test_on_rocm_the_timing_failures_sglang_only_warns_about_are_explained():
    """SGLang's _assert_le on ROCm warns (rel 1.0) instead of failing; the plugin fails (docs/baselines.md)."""
    results = check(RELEASES["0.5.23"], "rocm")
    assert not judging.differs(results)
    explained = [v for v in results.values() if "explained:" in v]
    assert explained and all("SGLang on ROCm only warns about" in v for v in explained)
    assert "explained" not in check(RELEASES["0.5.23"])["qwen_image_t2i"]


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    tree = tmp_path / "sglang-0.5.23"
    shutil.copytree(RELEASES["0.5.23"], tree)
    utils = tree / SERVER_DIR / "test_server_utils.py"
    text = utils.read_text()
    assert text.count(old) == 1
    utils.write_text(text.replace(old, new))
    return tree


@pytest.mark.server
def test_a_validator_edited_in_a_copy_is_reported_different_with_the_first_difference(tmp_path):
    """The first step allowed 2x instead of 4x: SGLang fails a first step that the plugin's 0.5.23 rule passes."""
    tree = _edited(tmp_path, "FIRST_DENOISE_STEP_TOLERANCE = 4.0", "FIRST_DENOISE_STEP_TOLERANCE = 2.0")
    results = check(tree)
    assert judging.differs(results)
    assert results["qwen_image_t2i"] == ("different: step[0] just under: SGLang fails step[0], plugin passes")
    # the cases whose first step is judged (the rest: run_perf_check false, or a baseline with no steps)
    assert judging.summary(results) == "52 different, 26 equal, 7 not expressible"


@pytest.mark.server
def test_a_validator_that_stops_failing_a_missing_load_baseline_is_reported_different(tmp_path):
    head = "    def validate_load(self, summary: PerformanceSummary) -> None:\n"
    tree = _edited(tmp_path, head, head + "        if self.scenario.expected_load_ms is None:\n            return\n")
    assert check(tree)["qwen_image_t2i"] == (
        "different: scenario without a load baseline: SGLang passes, plugin fails expected_load_ms missing"
    )


@pytest.mark.server  # heavy: every release's wheel (fetched once into the cache), 18 checks
def test_every_release_from_0_5_6_to_0_5_23_is_judged_as_it_judges():
    for tree in release_trees():
        results = check(tree)
        assert not judging.differs(results), (tree.name, {k: v for k, v in results.items() if "different" in v})
        assert any(v.startswith("equal") for v in results.values()), tree.name
