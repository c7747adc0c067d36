"""The GitHub step summary: totals, the regressions with Δ and stage, the other non-passes' reasons, every
scenario, collapsed details, provenance."""

from __future__ import annotations

from pytest_diffperf.results.provenance import Provenance
from pytest_diffperf.results.stepsummary import markdown, totals
from tests.support.reports import results


def test_step_summary(tmp_path):
    found = results(tmp_path / "none.png")
    provenance = Provenance(
        timestamp="2026-05-01T12:00:00+00:00", commit="abc1234def", device="NVIDIA H100", runner="r1"
    )
    md = markdown(found, {"profile": "pr_test", "hardware": "h100"}, provenance).splitlines()
    assert md[0] == "### 💥 diffperf: profile `pr_test` on `h100`"
    assert md[2].startswith("**5 scenarios: 1 pass, 2 fail, 1 inconclusive, 1 error** · pytest-diffperf ")
    assert "commit abc1234def" in md[2] and "NVIDIA H100" in md[2] and "runner r1" in md[2]
    at = md.index("#### Regressions")
    assert md[at + 4 : at + 7] == [
        "| ab | A/B e2e | 1120.00 ms | 1000.00 (base) | +12.0% [+8.0%, +16.0%] | - | ±5.0% | - |",
        "| slow | e2e | 1400.00 ms | 1000.00 | +40.0% | 1100.00 | +10.0% | DenoisingStage +400 ms |",
        "| slow | stage[DenoisingStage] | 1200.00 ms | 800.00 | +50.0% | 880.00 | +10.0% | DenoisingStage |",
    ]
    others = md[md.index("#### Not passed") : md.index("#### Scenarios")]
    assert [row.split(" | ")[0] for row in others if row.startswith("| ") and "---" not in row][1:] == [
        "| slow", "| noisy", "| ab", "| broken"]  # fmt: skip
    assert (
        "| noisy | inconclusive | PERFORMANCE: inconclusive (3 fresh server(s), 9 requests): the run's noise supports neither |"
        in others
    )
    assert "| broken | error | server http://x exited with code 1 |" in others
    assert (
        "| slow | fail | 2 check(s) over: e2e +40.0% &gt; +10.0%, stage[DenoisingStage] +50.0% &gt; +10.0%; output: slow: "
        "frame 0 ssim 0.41 &lt; 0.95; next, if the output change is intended: `pytest --regen-ground-truth -k slow` |"
    ) in others
    assert others[others.index("**next**, for the inconclusive scenario(s) (noisy):") + 2 :][:4] == [
        "- record this machine when it is quiet: `pytest --regen-baselines --diffperf-baselines=FILE -k noisy`",
        "- run A/B: `--diffperf-base=current (or python=BASE-VENV/bin/python: the base build)`",
        "- more requests or servers: `perf_repeat_requests in the case, --diffperf-remeasure=5`",
        "- calibrate the noise: `diffperf calibrate --ab AA.json --history DIR -o noise.json, then --diffperf-noise=noise.json (docs/verdicts.md)`",
    ]
    assert (
        "| ❔ | noisy | inconclusive | 1090.00 | 1000.00 | +9.0% | e2e +9.0% (allowed +10.0%) [+4.0%, +15.0%] of 3 process(es) |"
        in md
    )
    assert "| ❌ | ab | fail | 1120.00 | 1000.00 | +12.0% | A/B e2e +12.0% [+8.0%, +16.0%] regressed |" in md
    assert "<details><summary>❌ <b>slow</b>: fail, e2e 1400.00 ms (+40.0%)</summary>" in md
    assert "A/B against `current`: regressed: e2e +12.0 % [+8.0, +16.0], 40 s" in md
    # a check the run judged with its noise shows that verdict (the limit engine's alone said pass)
    assert "| e2e | 1090.00 | 1000.00 | +9.0% | 1100.00 | inconclusive [+4.0%, +15.0%] of 3 process(es) |" in md
    assert "<details><summary>Provenance</summary>" in md and "| commit | abc1234def |" in md


def test_totals_use_the_outcome_words():
    assert totals([]) == "0 scenarios: none"
