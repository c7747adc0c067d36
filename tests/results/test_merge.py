"""`diffperf merge`: results files combined, one summary, coverage check, and every input error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_diffperf.cli import main
from pytest_diffperf.results.merge import results_of
from pytest_diffperf.results.model import RESULTS_VERSION
from tests.support import resultfiles

HEADER = {"version": RESULTS_VERSION, "profile": "pr_test", "preset": "sglang", "hardware": "cpu", "launcher": "reference"}  # fmt: skip
BASELINE = Path(__file__).resolve().parents[2] / "data" / "perf_baselines" / "cpu.json"


def result(scenario: str, verdict: str = "pass", message: str = "", port: int = 20001, **fields) -> dict:
    e2e = {"name": "e2e", "kind": "e2e", "actual": 500.0, "expected": 511.71, "limit": 1279.27, "rel": 1.5, "pad": 20}
    server = {"pid": 100 + port, "port": port, "load_ms": 7000.0, "log": "server.log", "devices": {}}
    checks = [e2e | {"verdict": verdict}] if verdict in ("pass", "fail") else []
    return {
        "scenario": scenario,
        "verdict": verdict,
        "rows": [],
        "checks": checks,
        "message": message,
        "server": server,
    } | fields


def doc(*scenarios: dict, shard: str = "1/2", **header) -> dict:
    rows = [{"scenario": s["scenario"], "request": 0, "e2e_ms": 500.0} for s in scenarios if s["verdict"] == "pass"]
    servers = [s["server"] for s in scenarios]
    return (
        HEADER
        | {"shard": shard, "baselines": ["x.json"]}
        | header
        | {"rows": rows, "scenarios": list(scenarios), "servers": servers}
    )


@pytest.fixture
def files(tmp_path):
    def write(*docs: dict | str) -> list[str]:
        paths = []
        for i, d in enumerate(docs, 1):
            path = tmp_path / f"results-{i}.json"
            path.write_text(d if isinstance(d, str) else json.dumps(d))
            paths.append(str(path))
        return paths

    return write


def test_merges_rows_scenarios_servers_and_any_other_record_list(files, tmp_path, capsys, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    first = doc(result("flux_tiny_t2i"), result("wan_tiny_t2v", port=20002)) | {"regen": [{"case": "flux_tiny_t2i"}]}
    second = doc(result("sd_tiny_t2i", port=26001), shard="2/2") | {"regen": [{"case": "sd_tiny_t2i"}]}
    out = tmp_path / "out" / "merged.json"
    assert main(["merge", *files(first, second), "-o", str(out), "--markdown", str(tmp_path / "m.md")]) == 0
    merged = json.loads(out.read_text())
    assert [s["scenario"] for s in merged["scenarios"]] == ["flux_tiny_t2i", "wan_tiny_t2v", "sd_tiny_t2i"]
    assert [r["scenario"] for r in merged["rows"]] == ["flux_tiny_t2i", "wan_tiny_t2v", "sd_tiny_t2i"]
    assert [s["port"] for s in merged["servers"]] == [20001, 20002, 26001]
    assert merged["regen"] == [{"case": "flux_tiny_t2i"}, {"case": "sd_tiny_t2i"}]
    assert merged["baselines"] == ["x.json"] and merged["shard"] is None and len(merged["merged_from"]) == 2
    text = capsys.readouterr().out.splitlines()
    assert text[0] == "diffperf merge: 2 file(s), 3 scenarios: 3 pass"
    header = ["scenario", "outcome", "e2e", "ms", "expected", "Δ", "limiting", "check", "reason"]
    assert text[1].split() == header
    row = ["flux_tiny_t2i", "pass", "500.00", "511.71", "-2.3%", "e2e", "-2.3%", "(allowed", "+150.0%)"]
    assert text[2].split() == row
    markdown = (tmp_path / "m.md").read_text()
    assert markdown == summary.read_text()
    assert "| ✅ | flux_tiny_t2i | pass | 500.00 | 511.71 | -2.3% | e2e -2.3% (allowed +150.0%) |" in markdown
    assert "**3 scenarios: 3 pass**" in markdown


def test_errors_and_failures_are_counted_and_fail_the_merge(files, capsys):
    failing = doc(
        result("flux_tiny_t2i", "fail", "e2e over its limit"),
        result("sd_tiny_t2i", "error", "server x exited with code 1\nlog tail"),
    )
    assert main(["merge", *files(failing, doc(result("wan_tiny_t2v", "skipped"), shard="2/2"))]) == 1
    out = capsys.readouterr().out
    assert "3 scenarios: 1 fail, 1 error, 1 skipped" in out
    rows = {line.split()[0]: line for line in out.splitlines()[2:5]}
    assert rows["sd_tiny_t2i"].split()[1] == "error" and rows["sd_tiny_t2i"].endswith("server x exited with code 1")
    assert rows["flux_tiny_t2i"].split()[1] == "fail"
    assert rows["flux_tiny_t2i"].endswith("1 check(s) over: e2e -2.3% > +150.0%")


def test_a_consistency_failure_fails_the_merge(files, capsys):
    mismatch = {"status": "fail", "message": "CONSISTENCY: flux_tiny_t2i: frame 0 ssim 0.41 < 0.95"}
    assert main(["merge", *files(doc(result("flux_tiny_t2i", consistency=mismatch), result("sd_tiny_t2i")))]) == 1
    out = capsys.readouterr().out
    assert "2 scenarios: 1 pass, 1 fail" in out
    assert "output: flux_tiny_t2i: frame 0 ssim 0.41 < 0.95" in out


@pytest.mark.parametrize("version", [2, 3])
def test_a_previous_versions_statuses_passed_and_failed_are_read_as_pass_and_fail(files, tmp_path, capsys, version):
    mismatch = {"status": "failed", "message": "CONSISTENCY: flux_tiny_t2i: frame 0 ssim 0.41 < 0.95"}
    old = doc(
        result("flux_tiny_t2i", consistency=mismatch, outcome="fail"),
        result("sd_tiny_t2i", consistency={"status": "passed"}, outcome="pass"),
        version=version,
    )
    new = doc(result("wan_tiny_t2v", consistency={"status": "fail"}), shard="2/2")
    merged = tmp_path / "merged.json"
    assert main(["merge", *files(old, new), "-o", str(merged)]) == 1
    assert "diffperf merge: 2 file(s), 3 scenarios: 1 pass, 2 fail" in capsys.readouterr().out
    written = json.loads(merged.read_text())
    assert [s["consistency"]["status"] for s in written["scenarios"]] == ["fail", "pass", "fail"]
    assert written["version"] == version  # what every input carries; its statuses are read as they are
    assert main(["merge", str(merged)]) == 1
    assert "1 file(s), 3 scenarios: 1 pass, 2 fail" in capsys.readouterr().out


def test_a_real_previous_version_file_merges_as_its_current_version_rewrite(files, tmp_path, capsys):
    outputs = []
    for i, results in enumerate((resultfiles.previous(), resultfiles.current())):
        assert main(["merge", *files(results), "-o", str(tmp_path / f"merged-{i}.json")]) == 1  # both scenarios fail
        outputs.append((json.loads((tmp_path / f"merged-{i}.json").read_text()), capsys.readouterr().out))
    (old, old_out), (new, new_out) = outputs
    assert [s["consistency"]["status"] for s in old["scenarios"]] == ["pass", "pass"]
    assert (old["version"], new["version"]) == (3, RESULTS_VERSION)
    assert {**old, "version": 0} == {**new, "version": 0}
    assert old_out.replace("merged-0", "merged-1") == new_out


def test_inconclusive_fails_the_merge_when_the_runs_said_so(files, capsys):
    unsure = result("flux_tiny_t2i", "inconclusive", "the run's noise supports neither a pass nor a fail")
    assert main(["merge", *files(doc(unsure), doc(result("sd_tiny_t2i"), shard="2/2"))]) == 0
    strict = [doc(unsure, inconclusive="fail"), doc(result("sd_tiny_t2i"), shard="2/2", inconclusive="fail")]
    assert main(["merge", *files(*strict)]) == 1
    assert "2 scenarios: 1 pass, 1 inconclusive" in capsys.readouterr().out


def test_expect_all_lists_scenarios_that_ran_in_no_shard(files, capsys, tmp_path):
    paths = files(doc(result("flux_tiny_t2i"), result("sd_tiny_t2i")))
    summary = tmp_path / "m.md"
    assert main(["merge", *paths, "--expect-all", str(BASELINE), "--hardware", "cpu", "--markdown", str(summary)]) == 1
    out = capsys.readouterr().out
    absent = "flux_tiny_t2i_8steps, sd_tiny_t2i_192, wan_tiny_t2v, flux_kontext_tiny_edit, wan_tiny_i2v"
    assert f"5 scenario(s) of {BASELINE} ran in no shard: {absent}" in out
    assert f"> 5 scenario(s) ran in no shard: {absent}" in summary.read_text()
    complete = files(doc(*(result(s) for s in json.loads(BASELINE.read_text())["scenarios"])))
    assert main(["merge", *complete, "--expect-all", str(BASELINE)]) == 0


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (
            [doc(result("a")), doc(result("a"), shard="2/2")],
            "results-2.json: scenario 'a' is also in {tmp}/results-1.json",
        ),
        (
            [doc(result("a")), doc(result("b"), profile="long_term")],
            "results-2.json: profile: profile is 'long_term' here but 'pr_test' in {tmp}/results-1.json",
        ),
        (
            [doc(result("a")), doc(result("b"), hardware="h100")],
            "results-2.json: hardware: hardware is 'h100' here but 'cpu'",
        ),
        (
            [doc(result("a")), doc(result("b"), inconclusive="fail")],
            "results-2.json: inconclusive: inconclusive is 'fail' here but 'report' in {tmp}/results-1.json",
        ),
        (
            [doc(result("a"), inconclusive="strict")],
            "results-1.json: inconclusive: expected one of report, fail, got 'strict'",
        ),
        (
            ["{not json"],
            "results-1.json: invalid JSON: Expecting property name enclosed in double quotes at line 1, column 2",
        ),
        (["[]"], "results-1.json: expected a JSON object at the top level, got a list"),
        ([{"rows": []}], "results-1.json: version: not a diffperf results file of version 2 to 6 (found version None)"),
        ([HEADER | {"scenarios": {}}], "results-1.json: scenarios: expected a list of scenario results, got an object"),
        (
            [HEADER | {"scenarios": [{"case": "a", "verdict": "pass"}]}],
            "results-1.json: scenarios.0.scenario: required key is missing",
        ),
        (
            [HEADER | {"scenarios": ["a"]}],
            "results-1.json: scenarios.0: expected a scenario result (an object), got a string",
        ),
        (
            [doc(result("a", "FAIL"))],
            "results-1.json: scenarios.0.verdict: expected 'pass', 'fail', 'inconclusive', 'error', 'skipped', 'unguarded' or "
            "'unjudged', got 'FAIL'",
        ),
        ([doc(result("a", ""))], "results-1.json: scenarios.0.verdict: expected 'pass', 'fail',"),
        (
            [doc(result("a", outcome="failed"))],
            "results-1.json: scenarios.0.outcome: outcome 'failed' does not follow from verdict 'pass' and "
            "consistency None: expected one of pass, fail, inconclusive, error, skipped, unguarded, unjudged",
        ),
        (
            [doc(result("a", outcome="pass", consistency={"status": "fail"}))],
            "results-1.json: scenarios.0.outcome: outcome 'pass' does not follow from verdict 'pass' and "
            "consistency 'fail': expected 'fail'",
        ),
        (
            [doc(result("a", consistency={"status": "FAILED"}))],
            "results-1.json: scenarios.0.consistency.status: expected 'pass', 'fail', 'skipped' or 'regenerated', "
            "got 'FAILED'",
        ),
        (
            [doc(result("a", consistency={"status": "passed"}))],
            "results-1.json: scenarios.0.consistency.status: expected 'pass', 'fail', 'skipped' or 'regenerated', "
            f"got 'passed' (version {RESULTS_VERSION} files say 'pass')",
        ),
        (
            [doc(result("a", consistency={"message": "no status"}), version=3)],
            "results-1.json: scenarios.0.consistency.status: expected 'pass', 'fail', 'skipped' or 'regenerated', "
            "got null",
        ),
        (
            [doc(result("a", consistency={"status": ["failed"]}), version=3)],
            "results-1.json: scenarios.0.consistency.status: expected 'pass', 'fail', 'skipped' or 'regenerated', "
            "got a list",
        ),
        (
            [doc(result("a"), version=1)],
            "results-1.json: version: not a diffperf results file of version 2 to 6 (found version 1); write it "
            "with pytest --diffperf-json",
        ),
    ],
)
def test_bad_inputs_are_clear_errors(files, tmp_path, capsys, inputs, message):
    assert main(["merge", *files(*inputs)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("diffperf merge: error: ") and message.format(tmp=tmp_path) in err, err


def test_missing_file_and_misused_options(tmp_path, capsys):
    assert main(["merge", str(tmp_path / "results-*.json")]) == 2
    assert capsys.readouterr().err.strip() == f"diffperf merge: error: {tmp_path}/results-*.json: file not found"
    assert main(["merge", str(tmp_path / "x.json"), "--hardware", "cpu"]) == 2
    assert capsys.readouterr().err.strip() == "diffperf merge: error: --hardware: only applies with --expect-all"


def test_rows_are_stored_once_and_rejoined_with_their_scenarios():
    stored = doc(result("a"), result("b")) | {
        "rows": [{"scenario": "b", "e2e_ms": 2.0}, {"scenario": "a", "e2e_ms": 1.0}]
    }
    for s in stored["scenarios"]:
        del s["rows"]
    assert [[row.model_dump() for row in r.rows] for r in results_of(stored)] == [
        [{"scenario": "a", "e2e_ms": 1.0}],
        [{"scenario": "b", "e2e_ms": 2.0}],
    ]
    own = doc(result("a", rows=[{"scenario": "a", "e2e_ms": 9.0}]))  # an entry with its own rows keeps them
    assert [[row.model_dump() for row in r.rows] for r in results_of(own)] == [[{"scenario": "a", "e2e_ms": 9.0}]]


def test_html_report_with_the_baselines_steps_and_the_historys_trend(files, tmp_path):
    pytest.importorskip("matplotlib")
    from tests.support.reports import Links

    step = {"name": "step[0]", "kind": "step", "actual": 30.0, "expected": 25.0, "limit": 60.0, "rel": 1.0, "pad": 5}
    scenario = result("flux_tiny_t2i", checks=[step | {"verdict": "pass"}])
    history = tmp_path / "hist"
    history.mkdir()
    for i in range(2):
        stamped = doc(scenario) | {"provenance": {"timestamp": f"2026-05-0{i + 1}T12:00:00+00:00"}}
        (history / f"{i}.json").write_text(json.dumps(stamped))
    page = tmp_path / "report.html"
    argv = [
        "merge",
        *files(doc(scenario)),
        "--html",
        str(page),
        "--history",
        str(history),
        "--expect-all",
        str(BASELINE),
    ]
    assert main(argv) == 1  # the other scenarios ran in no file
    text = page.read_text()
    links = Links()
    links.feed(text)
    assert all(url.startswith(("#", "data:")) for url in links.urls) and links.tags.count("svg") >= 1
    assert "<h2>Trend over 2 run(s)</h2>" in text and "merged from 1 file(s)" in text
    assert "per-step times" in text and "stroke-dasharray" in text  # the step chart's dashed line: the baseline's steps


def test_every_scenario_that_did_not_pass_is_listed_after_a_merge(files, tmp_path, capsys, monkeypatch):
    """A mixed run over two shards: the step summary's Not passed names each non-pass, the inconclusive one whose
    limit-formula check is over its limit too (it was left out), with its reason whole and next: lines; the
    terminal lists them under the table."""
    over = result("wan_tiny_t2v", "inconclusive", "PERFORMANCE: inconclusive (1 fresh server(s), 3 requests): the "
                  "run's noise supports neither a pass nor a fail at these limits\n  e2e: inconclusive: ...")  # fmt: skip
    over["checks"] = [result("x", "fail")["checks"][0]]  # the engine's verdict; the interval's is inconclusive
    mismatch = {"status": "fail", "message": "CONSISTENCY: case sd_tiny_t2i (1 GPU) differs: ssim on the image"}
    first = doc(result("flux_tiny_t2i"), result("flux_tiny_t2i_8steps", "fail", "e2e over its limit"), over)
    second = doc(result("sd_tiny_t2i", consistency=mismatch), result("wan_tiny_i2v", "error", "server x exited"),
                 shard="2/2")  # fmt: skip
    md = tmp_path / "m.md"
    monkeypatch.setenv("COLUMNS", "200")  # the lines under the table wrap at the terminal's width
    assert main(["merge", *files(first, second), "-o", str(tmp_path / "merged.json"), "--markdown", str(md)]) == 1
    text = md.read_text()
    listed = text[text.index("#### Not passed") : text.index("#### Scenarios")]
    names = re.findall(r"^\| (\w+) \| (\w+) \|", listed, re.M)[1:]  # the header first
    assert names == [("flux_tiny_t2i_8steps", "fail"), ("wan_tiny_t2v", "inconclusive"), ("sd_tiny_t2i", "fail"),
                     ("wan_tiny_i2v", "error")]  # fmt: skip
    assert ("| wan_tiny_t2v | inconclusive | PERFORMANCE: inconclusive (1 fresh server(s), 3 requests): the run's "
            "noise supports neither a pass nor a fail at these limits |") in listed  # fmt: skip
    assert "next, if the output change is intended: `pytest --regen-ground-truth -k sd_tiny_t2i`" in listed
    assert f"- record this machine when it is quiet: `diffperf accept {tmp_path / 'merged.json'} (or pytest --regen-baselines " \
           "--diffperf-baselines=x.json -k wan_tiny_t2v)`" in listed  # fmt: skip
    out = capsys.readouterr().out
    below = out[out.index("not passed:") :]
    assert "  wan_tiny_t2v (inconclusive): PERFORMANCE: inconclusive (1 fresh server(s), 3 requests): the" in below
    assert "    e2e: inconclusive: ..." in below
    assert "  next, for wan_tiny_t2v:" in below and "    run A/B: --diffperf-base=current" in below
