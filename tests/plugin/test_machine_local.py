"""The newcomer's two steps to decisive verdicts: record this machine once (a run, then `diffperf accept` of
its results file), then judge: no change does not fail, a 2x slowdown (an injected delay) does. Once each
here; benchmarks/bench_machine_local.py counts 10 of each (docs/benchmarks.md)."""

from __future__ import annotations

import json

import pytest

from pytest_diffperf.cli import main
from tests.support.paths import REPO
from tests.support.suite import GENEROUS, refservers, results, tiny_case

pytestmark = pytest.mark.server  # starts server processes

BUNDLED = json.loads((REPO / "data" / "perf_baselines" / "cpu.json").read_text())


def test_record_with_accept_then_no_change_passes_and_a_slowdown_fails(pytester, suite, monkeypatch):
    case = tiny_case("tiny", perf_repeat_requests=3, perf_warmup_requests=1)
    args = suite([case], {"tiny": GENEROUS}, BUNDLED["tolerances"])
    first = pytester.runpytest(*args)
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(
        ["diffperf: note: *baselines.json was measured on a machine it does not name, this run measures on *: "
         "timings of another machine; for decisive verdicts record this one once (pytest --regen-baselines "
         "--diffperf-baselines=FILE, or diffperf accept of a run's --diffperf-json), then judge against it"]
    )  # fmt: skip
    monkeypatch.chdir(pytester.path)
    assert main(["accept", "results.json", "--baselines=baselines.json"]) == 0
    recorded = json.loads((pytester.path / "baselines.json").read_text())
    device = results(pytester)["provenance"]["device"]
    assert recorded["metadata"]["measured_device"] == device

    same = pytester.runpytest(*args)
    assert "baselines.json was measured on" not in same.stdout.str()  # this machine's now
    assert same.ret == 0 and results(pytester)["scenarios"][0]["verdict"] in ("pass", "inconclusive")

    # e2e about 4x: a 2x slowdown against a same-hour baseline is only sometimes decisive on a shared 2-core
    # machine (docs/benchmarks.md, "Machine-local baselines"); the test proves the path, not that bar
    delay = round(3 * recorded["scenarios"]["tiny"]["expected_e2e_ms"], 1)
    slow = tiny_case("tiny", f"--inject-delay DenoisingStage={delay}", perf_repeat_requests=3, perf_warmup_requests=1)
    (pytester.path / "cases.json").write_text(json.dumps({"cases": [slow]}))
    pytester.runpytest(*args).assert_outcomes(failed=1)
    assert results(pytester)["scenarios"][0]["verdict"] == "fail"
    assert not refservers()
