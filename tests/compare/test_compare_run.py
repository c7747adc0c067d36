"""`diffperf compare` end to end: real reference-server processes, the command run in this process.

Two runs share one folder and one comparison journal: a healthy one (two cases on one server), then one
where a server crashes, a request is invalid and a server fails to start, next to a healthy case (it
names the journal by its deprecated option, --history).
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
from datetime import datetime

import pytest

from pytest_diffperf._util.tempdirs import MARKER
from pytest_diffperf.protocol import PERF_LOG_FILE
from tests.support.compare import compare, servers_under, write_cases
from tests.support.paths import REPO
from tests.support.suite import tiny_case

pytestmark = pytest.mark.server  # starts server processes

RESULT_KEYS = [
    "case_id",
    "framework",
    "model",
    "task",
    "error",
    "latency_s",
    "latency_samples_s",
    "server_latency_s",
    "server_stage_medians_ms",
    "median_denoise_step_ms",
    "missing_perf_records",
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("compare")


@pytest.fixture(scope="module")
def healthy(folder):
    """Two cases of one server group, 3 measured requests each (the flag overrides the file's 2)."""
    cases = [tiny_case("a"), tiny_case("b", seed=2, num_inference_steps=3)]
    write_cases(folder / "healthy.json", cases, measurement_repeats=2)
    proc = compare(
        "--config", "healthy.json", "--frameworks", "reference", "--measurement-repeats", "3",
        "--output", "healthy-results.json", "--log-dir", "logs-healthy", "--journal", "journal.jsonl",
        cwd=folder,
    )  # fmt: skip
    return proc, json.loads((folder / "healthy-results.json").read_text())


@pytest.fixture(scope="module")
def faulty(folder, healthy):
    cases = [
        tiny_case("crash", "--inject-crash-on-request 2"),  # request 1 is the warmup
        tiny_case("bad_size", width=60),  # HTTP 400: not a multiple of 16
        tiny_case("a"),
        tiny_case("nostart", "--inject-fail-startup"),
    ]
    write_cases(folder / "faulty.json", cases)
    proc = compare(
        "--config", "faulty.json", "--frameworks", "reference", "--output", "faulty-results.json",
        "--log-dir", "logs-faulty", "--history", "journal.jsonl", "--startup-timeout", "300",
        cwd=folder,
    )  # fmt: skip
    return proc, json.loads((folder / "faulty-results.json").read_text())


def perf_records(log_dir, server: int) -> list[dict]:
    (run,) = log_dir.iterdir()
    lines = (run / f"server-{server}" / PERF_LOG_FILE).read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_results_file_has_the_schema_and_medians_of_the_samples(folder, healthy):
    proc, doc = healthy
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(doc) == ["timestamp", "commit_sha", "measurement_repeats", "results"]
    assert datetime.fromisoformat(doc["timestamp"]).tzinfo is not None
    assert isinstance(doc["commit_sha"], str) and doc["commit_sha"]
    assert doc["measurement_repeats"] == 3
    assert [(r["case_id"], r["framework"]) for r in doc["results"]] == [("a", "reference"), ("b", "reference")]
    for row in doc["results"]:
        assert list(row) == RESULT_KEYS
        assert row["model"] == "tiny/flux-t2i" and row["task"] == "text-to-image"
        assert row["error"] is None and row["missing_perf_records"] == 0
        assert len(row["latency_samples_s"]) == 3 and all(s > 0 for s in row["latency_samples_s"])
        assert row["latency_s"] == round(statistics.median(row["latency_samples_s"]), 3)
    (run,) = (folder / "logs-healthy").iterdir()
    assert [p.name for p in run.iterdir()] == ["server-1"]  # the two cases shared one server
    assert not servers_under(folder / "logs-healthy")


def test_server_figures_are_medians_of_the_measured_perf_records(folder, healthy):
    _, doc = healthy
    records = perf_records(folder / "logs-healthy", 1)
    assert len(records) == 8  # per case: the warmup request, then 3 measured ones
    for row, measured in zip(doc["results"], (records[1:4], records[5:8]), strict=True):
        assert row["server_latency_s"] == round(
            statistics.median(round(r["total_duration_ms"] / 1000, 3) for r in measured), 3
        )
        stages = row["server_stage_medians_ms"]
        assert {"TextEncodingStage", "DenoisingStage", "DecodingStage"} <= set(stages)
        for name, median in stages.items():
            times = [next(s["execution_time_ms"] for s in r["stages"] if s["name"] == name) for r in measured]
            assert median == round(statistics.median(times), 3)
        steps = [ms for r in measured for ms in r["steps"]]
        assert len(steps) == 3 * (4 if row["case_id"] == "a" else 3)
        assert row["median_denoise_step_ms"] == round(statistics.median(steps), 3)


def test_terminal_table_and_progress(healthy):
    proc, doc = healthy
    out = proc.stdout
    assert "2 run(s) of 1 warmup + 3 measured request(s); server logs in " in out
    assert "[1/2] a (reference): tiny/flux-t2i, text-to-image" in out
    header = next(line for line in out.splitlines() if line.startswith("case "))
    assert header.split() == ["case", "framework", "latency", "s", "n", "server", "s", "denoise", "step", "ms", "missing", "records"]  # fmt: skip
    row = next(line.split() for line in out.splitlines() if line.startswith("b "))
    assert row[:4] == ["b", "reference", f"{doc['results'][1]['latency_s']:.3f}", "3"]
    assert "results written to healthy-results.json" in out and "had errors" not in out


def test_failures_are_listed_exit_1_and_the_healthy_case_is_measured(folder, faulty):
    proc, doc = faulty
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = {r["case_id"]: r for r in doc["results"]}
    assert list(rows) == ["crash", "bad_size", "a", "nostart"]
    assert rows["a"]["error"] is None and len(rows["a"]["latency_samples_s"]) == 3
    assert rows["a"]["server_stage_medians_ms"]["DenoisingStage"] > 0
    for case_id in ("crash", "bad_size", "nostart"):
        assert rows[case_id]["latency_s"] is None and rows[case_id]["latency_samples_s"] == []
    assert "exited with code 1 during request 1" in rows["crash"]["error"]
    assert "injected crash on request 2" in rows["crash"]["error"]  # the server's last words
    assert "HTTP 400" in rows["bad_size"]["error"] and "width must be a multiple of 16" in rows["bad_size"]["error"]
    assert "exited with code 1 while starting" in rows["nostart"]["error"]
    assert "injected startup failure" in rows["nostart"]["error"]
    assert all(f"(log: {folder}/logs-faulty/" in rows[c]["error"] for c in ("crash", "bad_size", "nostart"))
    summary = proc.stdout[proc.stdout.index("3 case(s) had errors:") :].splitlines()
    assert summary[1:] == [f"  {c} (reference): {rows[c]['error']}" for c in ("crash", "bad_size", "nostart")]
    assert re.search(r"--- last \d+ log line\(s\)", proc.stderr)  # the full server log tails, on stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    (run,) = (folder / "logs-faulty").iterdir()
    assert sorted(p.name for p in run.iterdir()) == ["server-1", "server-2", "server-3"]  # bad_size and a shared one
    assert not servers_under(folder / "logs-faulty")


def test_the_journal_has_both_runs_and_the_report_shows_the_trend(folder, healthy, faulty):
    lines = (folder / "journal.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [healthy[1], faulty[1]]  # --history still appends, and says so
    deprecated = "diffperf compare: --history is deprecated: use --journal (the comparison journal, a JSONL file)"
    assert [line for line in faulty[0].stderr.splitlines() if "deprecated" in line] == [deprecated]
    assert "deprecated" not in healthy[0].stderr
    assert "appended to the journal journal.jsonl" in healthy[0].stdout
    proc = compare("--report", "journal.jsonl", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()[2:] if line and not line.startswith(" ")}
    before, last = healthy[1]["results"][0]["latency_s"], faulty[1]["results"][2]["latency_s"]
    assert rows["a"][:6] == ["a", "reference", "2", f"{last:.3f}", f"{before:.3f}", f"{last / before - 1:+.1%}"]
    assert rows["b"][2:6] == ["1", f"{healthy[1]['results'][1]['latency_s']:.3f}", "-", "-"]
    assert rows["nostart"][3] == "ERROR"
    assert f"  nostart (reference) last run: {faulty[1]['results'][3]['error']}" in proc.stdout


def test_a_hung_server_is_replaced_before_the_next_case(tmp_path, monkeypatch):
    """Also: with no --output, results and logs go in a new temp folder, never the working folder."""
    # One server group; the 4th request hangs: h1 = requests 1-2, h2 = 3-4 (hangs), h3 needs a fresh server.
    cases = [tiny_case(case_id, "--inject-hang-on-request 4", timeout_s=8) for case_id in ("h1", "h2", "h3")]
    (tmp_path / "cwd").mkdir()
    (tmp_path / "temp").mkdir()
    write_cases(tmp_path / "cwd" / "cases.json", cases)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))  # the temp folder, as TMPDIR sets it
    proc = compare(
        "--config", "cases.json", "--frameworks", "reference", "--measurement-repeats", "1", cwd=tmp_path / "cwd"
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [p.name for p in (tmp_path / "cwd").iterdir()] == ["cases.json"]
    (output,) = (tmp_path / "temp").iterdir()
    assert output.name.startswith("diffperf-compare-")
    assert f"results written to {output / 'comparison-results.json'}" in proc.stdout
    errors = [r["error"] for r in json.loads((output / "comparison-results.json").read_text())["results"]]
    assert errors[0] is None and errors[2] is None
    assert errors[1].startswith("server http://127.0.0.1:") and "did not answer request 1 within 8 s" in errors[1]
    assert "1 case(s) had errors:" in proc.stdout
    (run,) = (output / "comparison-logs").iterdir()
    assert sorted(p.name for p in run.iterdir()) == ["server-1", "server-2"]
    assert not servers_under(output)


def test_a_dry_run_and_a_run_of_a_bundled_case_leave_the_working_folder_empty(tmp_path, monkeypatch):
    """Without --output, the results and the logs (the servers' too) go in a new temp folder; a dry run writes
    nothing anywhere."""
    cwd, temp = tmp_path / "cwd", tmp_path / "temp"
    cwd.mkdir()
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # the temp folder, as TMPDIR sets it
    args = ("--cases", str(REPO / "data" / "cases.json"), "--case-ids", "flux_tiny_t2i", "--server", "reference")
    dry = compare(*args, "--dry-run", cwd=cwd)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "flux_tiny_t2i (reference): " in dry.stdout
    assert list(cwd.iterdir()) == [] and list(temp.iterdir()) == []
    proc = compare(*args, "--measurement-repeats", "1", cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(cwd.iterdir()) == []
    (output,) = temp.iterdir()
    assert sorted(p.name for p in output.iterdir()) == [MARKER, "comparison-logs", "comparison-results.json"]
    (run,) = (output / "comparison-logs").iterdir()
    assert PERF_LOG_FILE in {p.name for p in (run / "server-1").iterdir()}  # the server wrote its own files there
