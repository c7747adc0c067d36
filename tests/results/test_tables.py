"""The summary table: the judged e2e, its Δ, the limiting check (time first, memory only when it fails or is
closest), A/B and noise intervals, the reason of every scenario that did not pass; one vocabulary."""

from __future__ import annotations

from pytest_diffperf.results.model import OUTCOMES, ScenarioResult
from pytest_diffperf.results.tables import SUMMARY_HEADER, limiting, summary_table
from tests.support.reports import check, results


def test_summary_rows(tmp_path):
    table = summary_table(results(tmp_path / "none.png"))
    assert table[0] == list(SUMMARY_HEADER)
    rows = {row[0]: row for row in table[1:]}
    assert rows["fast"] == ["fast", "pass", "500.00", "510.00", "-2.0%", "e2e -2.0% (allowed +37.3%)", ""]
    assert rows["slow"][1:6] == [
        "fail",
        "1400.00",
        "1000.00",
        "+40.0%",
        "stage[DenoisingStage] +50.0% (allowed +10.0%)",
    ]
    assert rows["slow"][6] == (
        "2 check(s) over: e2e +40.0% > +10.0%, stage[DenoisingStage] +50.0% > +10.0%; output: slow: frame 0 ssim 0.41 < 0.95"
    )
    assert rows["noisy"][1] == "inconclusive"
    assert rows["noisy"][5] == "e2e +9.0% (allowed +10.0%) [+4.0%, +15.0%] of 3 process(es)"
    assert rows["noisy"][6].startswith("PERFORMANCE: inconclusive (3 fresh server(s), 9 requests)")
    assert rows["ab"][1:6] == ["fail", "1120.00", "1000.00", "+12.0%", "A/B e2e +12.0% [+8.0%, +16.0%] regressed"]
    assert rows["broken"][1:] == ["error", "-", "-", "-", "-", "server http://x exited with code 1"]
    assert {row[1] for row in table[1:]} <= set(OUTCOMES)


def limiting_name(result: ScenarioResult) -> str:
    found = limiting(result)
    assert found is not None, result
    return found.name


def test_memory_limits_only_when_it_fails_or_is_closest():
    time_first = ScenarioResult(scenario="a", verdict="pass", checks=[
        check("e2e", "e2e", 1050.0, 1000.0, 1100.0), check("mem", "vram", 1020.0, 1000.0, 1100.0)])  # fmt: skip
    assert limiting_name(time_first) == "e2e"
    closer = ScenarioResult(scenario="a", verdict="pass", checks=[
        check("e2e", "e2e", 1000.0, 1000.0, 1100.0), check("mem", "vram", 1090.0, 1000.0, 1100.0)])  # fmt: skip
    assert limiting_name(closer) == "mem"
    tie = ScenarioResult(scenario="a", verdict="pass", checks=[
        check("mem", "vram", 1050.0, 1000.0, 1100.0), check("e2e", "e2e", 1050.0, 1000.0, 1100.0)])  # fmt: skip
    assert limiting_name(tie) == "e2e"
