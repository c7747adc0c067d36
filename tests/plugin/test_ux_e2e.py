"""What a user sees, end to end against the reference server: live progress, the failure message, the
summary table, the step summary, JUnit, the HTML report, the history, the comparison and the log folder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.cli import diffperf
from tests.support.paths import REPO
from tests.support.reports import Links
from tests.support.suite import GENEROUS, tiny_case

pytestmark = pytest.mark.server  # starts server processes

SLOW = "--inject-delay DenoisingStage=3000 --inject-load-delay 2500"  # a 3 s request, a load of 2.5 s and more
XSD = REPO / "tests" / "data" / "junit" / "junit-10.xsd"


@pytest.fixture
def two(suite, pytester, monkeypatch):
    """A passing and a failing scenario (a 3 s delay in denoising against a 500 ms e2e and a 100 ms denoising
    stage), live progress every second."""
    args = suite(
        [tiny_case("fast"), tiny_case("slow", SLOW)],
        {"fast": GENEROUS, "slow": dict(GENEROUS, expected_e2e_ms=500.0, stages_ms={"DenoisingStage": 100.0})},
    )
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "step_summary.md"))
    return [*args, "--diffperf-progress-every=1"]


def test_progress_failure_summary_step_summary_junit_html_history(pytester, two):
    result = pytester.runpytest(
        *two, "-v", "--junitxml=junit.xml", "--diffperf-html=report.html", "--diffperf-history=hist"
    )
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    lines = out.splitlines()

    # live progress: the start, heartbeats while loading and during the long request, before the failure report
    starts = [i for i, line in enumerate(lines) if line.startswith("diffperf: starting server ")]
    assert len(starts) == 2, out  # two server groups (the slow one's serve args differ)
    assert re.search(r"starting server 2 \(tiny/flux-t2i\): python -m pytest_diffperf\.refserver serve ", out)
    assert re.search(r"; log: \S+/server-2/server\.log$", lines[starts[1]])
    loading = [line for line in lines if re.match(r"diffperf: server 2 loading: \d+ s", line)]
    request = [line for line in lines if re.match(r"diffperf: server 2 request \d+ of slow: \d+ s", line)]
    assert loading and len(request) >= 2, out
    failures = lines.index(next(line for line in lines if "= FAILURES =" in line))
    assert lines.index(request[-1]) < failures  # written while the test ran, not with its captured output

    # the failure message: actual, expected, limit, Δ, how the actual was formed, what to do next, a clean log tail
    report = out[failures:]
    e2e = re.search(r"\n\s*e2e\s+(\d+\.\d+)\s+500\.00\s+\+(\d+\.\d)%\s+(\d+\.\d+)\s+\+(\d+\.\d)%", report)
    assert e2e, report
    assert float(e2e.group(1)) > 3000 and float(e2e.group(2)) > 500
    assert re.search(r"e2e = 1 request: \d+\.\d+ ms", report)
    assert re.search(r"if the change is intended:\s+pytest --regen-baselines .*-k slow", report)
    assert re.search(r"every limit of the scenario:\s+diffperf show baselines\.json slow --profile pr_test", report)
    tail = report[report.index("server log ") :]
    assert "access-log line(s) left out" in tail and "GET /health" not in tail

    # the summary table: one vocabulary, the judged e2e, its Δ, the limiting check, the reason of the failure
    summary = out[out.index("diffperf summary") :].splitlines()
    rows = {line.split()[0]: line.split(maxsplit=2) for line in summary[2:4]}
    assert rows["fast"][1] == "pass" and rows["slow"][1] == "fail"
    assert re.search(
        r"2 check\(s\) over: e2e \+\d+\.\d% > \+200\.0%, stage\[DenoisingStage\] \+\d+\.\d% > \+", rows["slow"][2]
    )
    assert "2 scenarios: 1 pass, 1 fail" in out and "PASS " not in out.split("diffperf summary")[1]

    # the step summary: totals, the regression with its Δ and stage, collapsed details, provenance
    md = (pytester.path / "step_summary.md").read_text()
    assert "**2 scenarios: 1 pass, 1 fail**" in md
    regression = re.search(
        r"^\| slow \| e2e \| \d+\.\d+ ms \| 500\.00 \| \+\d+\.\d% \| [\d.]+ \| \+200\.0% \| (.*) \|$", md, re.M
    )
    assert regression and regression.group(1).startswith("DenoisingStage +"), md
    assert "<details><summary>❌ <b>slow</b>: fail" in md and "<details><summary>Provenance</summary>" in md

    # provenance in the header and in the results file; the rows stored once
    document = json.loads((pytester.path / "results.json").read_text())
    provenance = document["provenance"]
    assert {"timestamp", "commit", "plugin_version", "hardware", "device", "runner"} <= set(provenance)
    assert re.search(rf"^diffperf: pytest-diffperf \S+, .*, reference {provenance['server_version']}", out, re.M)
    assert [row["scenario"] for row in document["rows"]] == ["fast", "slow"]
    assert not [s for s in document["scenarios"] if "rows" in s]

    # JUnit: valid xunit2, a few numbers as properties, the full result as an attachment
    lxml = pytest.importorskip("lxml.etree")
    xml = lxml.parse(str(pytester.path / "junit.xml"))
    schema = lxml.XMLSchema(lxml.parse(str(XSD)))
    assert schema.validate(xml), schema.error_log
    props = {p.get("name"): p.get("value") for p in xml.iter("property")}
    assert props["diffperf_outcome[slow]"] == "fail" and float(props["diffperf_e2e_ms[slow]"]) > 3000
    assert props["diffperf_timestamp"] == provenance["timestamp"] and props["diffperf_device"] == provenance["device"]
    attached = Path(props["diffperf_result[slow]"])
    assert json.loads(attached.read_text())["outcome"] == "fail"
    assert f"[[ATTACHMENT|{attached}]]" in "".join(xml.getroot().itertext())
    assert len((pytester.path / "junit.xml").read_bytes()) < 20000  # numbers, not each result's JSON

    # the HTML report: self-contained (inline SVG charts, no URL outside the page), the failing scenario open
    page = (pytester.path / "report.html").read_text()
    links = Links()
    links.feed(page)
    assert links.tags.count("svg") >= 2
    assert all(url.startswith(("#", "data:")) for url in links.urls), links.urls
    assert "<script src" not in page and "<link" not in page
    assert re.search(r"<section class='scenario notpassed' id='s-slow'><details open>", page)

    # the history: the run with its provenance
    (saved,) = (pytester.path / "hist").glob("*.json")
    assert json.loads(saved.read_text())["provenance"]["timestamp"] == provenance["timestamp"]


def test_under_xdist_progress_log_dir_and_compare_to(pytester, two):
    first = pytester.runpytest(*two, "-k", "fast", "--diffperf-history=hist")
    first.assert_outcomes(passed=1)
    result = pytester.runpytest_subprocess(
        *two, "-n", "1", "--diffperf-log-dir=logs", "--diffperf-history=hist", "--diffperf-compare-to=last"
    )
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert re.search(r"^\[gw0\] diffperf: server 2 request \d+ of slow: \d+ s", out, re.M), out
    assert re.search(r"^\[gw0\] diffperf: server \d loading: \d+ s", out, re.M), out
    header = re.search(r"^diffperf: server logs in (\S+)/gw\*/server-N/ \(one folder per xdist worker\)$", out, re.M)
    assert header, out
    folder = Path(header.group(1))
    assert folder.parent == pytester.path / "logs" and (folder / "gw0" / "server-1" / "server.log").is_file()
    assert re.search(r"diffperf: against \S+hist/\S+\.json", out)
    compared = out[out.index("diffperf: against") :].splitlines()
    assert any(line.split()[:1] == ["fast"] for line in compared), compared
    assert any(line.split()[:1] == ["slow"] and "new" in line for line in compared), compared

    trend = diffperf("trend", str(pytester.path / "hist"))
    assert trend.returncode == 0, trend.stderr
    assert trend.stdout.startswith("diffperf trend: 2 run(s) in "), trend.stdout
    assert re.search(r"^fast\s+2\s+\d+\.\d+\s+\d+\.\d+\s+\d+\.\d+\s+-$", trend.stdout, re.M), trend.stdout


def test_collect_only_leaves_no_folder_and_says_so(pytester, suite):
    args = suite([tiny_case("fast")], {"fast": GENEROUS})
    result = pytester.runpytest(*args, "--co")
    result.stdout.fnmatch_lines(["diffperf: server logs: none (collect-only run)"])
    assert not list(pytester.path.rglob("diffperf"))


def test_the_failure_report_follows_tb_and_the_log_tail_option(pytester, suite):
    args = suite(
        [tiny_case("slow", "--inject-delay DenoisingStage=300")], {"slow": dict(GENEROUS, expected_e2e_ms=50.0)}
    )
    line = pytester.runpytest(*args, "--tb=line")
    line.assert_outcomes(failed=1)
    out = line.stdout.str()
    assert re.search(r"baselines\.json::slow:0: 1 check\(s\) failed: e2e \d+\.\d+ ms \+\d+\.\d% \(limit", out), out
    assert "next:" not in out and "server log " not in out  # the one line alone

    short = pytester.runpytest(*args, "--tb=short", "--diffperf-log-tail=3")
    short.assert_outcomes(failed=1)
    out = short.stdout.str()
    assert "next:" in out
    tail = re.search(
        r"server log \S+ \(last (\d+) line\(s\)(?:, \d+ access-log line\(s\) left out)?\) -+\n((?:.*\n){3})", out
    )
    assert tail and tail.group(1) == "3", out
    assert "diffperf summary" in out.split(tail.group(2))[1].split("\n")[0]  # 3 lines, then the summary


def test_a_long_video_job_shows_its_progress(pytester, suite):
    video = tiny_case(
        "clip",
        "--inject-delay DenoisingStage=3000",
        model="tiny/wan-t2v",
        task="text-to-video",
        width=64,
        height=64,
        num_frames=5,
    )
    args = suite([video], {"clip": GENEROUS})
    result = pytester.runpytest(*args, "--diffperf-progress-every=1")
    result.assert_outcomes(passed=1)
    beats = re.findall(
        r"^diffperf: server 1 request 1 of clip: \d+ s; video job (\S+): (\w+)", result.stdout.str(), re.M
    )
    assert len(beats) >= 2, result.stdout.str()
    assert {status for _, status in beats} <= {"queued", "in_progress"} and len({job for job, _ in beats}) == 1
