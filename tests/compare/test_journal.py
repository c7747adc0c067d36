"""Comparison journals and the trend report (no servers: hand-written journals)."""

from __future__ import annotations

import json

import pytest

from pytest_diffperf.compare import journal
from pytest_diffperf.errors import DiffperfError
from tests.support.compare import compare_here

pytestmark = pytest.mark.server  # starts server processes


def run(sha: str, **latencies) -> dict:
    """A results document; a latency given as a string is that case's error."""
    results = [
        {"case_id": case_id, "framework": "sglang", "latency_s": None if isinstance(v, str) else v,
         "error": v if isinstance(v, str) else None}
        for case_id, v in latencies.items()
    ]  # fmt: skip
    return {"timestamp": "2025-01-01T00:00:00+00:00", "commit_sha": sha, "measurement_repeats": 3, "results": results}


@pytest.fixture
def journal_file(tmp_path):
    path = tmp_path / "sub" / "journal.jsonl"
    for doc in (
        run("c1", a=1.0, b=2.0),
        run("c2", a=3.0, b="server died"),
        run("c3", a="timeout", b=2.2),
        run("c4", a=1.5, b=1.8, new=0.5),
    ):
        journal.append(path, doc)
    return path


def test_trend_is_the_last_run_against_the_median_of_earlier_measured_runs(journal_file):
    runs = journal.read(journal_file)
    assert [r.commit_sha for r in runs] == ["c1", "c2", "c3", "c4"]
    trends = {t.case_id: t for t in journal.trends(runs)}
    assert list(trends) == ["a", "b", "new"]
    assert trends["a"].previous == (1.0, 3.0) and trends["a"].baseline_s == 2.0  # the error run left out
    assert trends["a"].change == pytest.approx(1.5 / 2.0 - 1)
    assert trends["b"].previous == (2.0, 2.2) and trends["b"].change == pytest.approx(1.8 / 2.1 - 1)
    assert trends["new"].runs == 1 and trends["new"].baseline_s is None and trends["new"].change is None


def test_report_table_and_last_errors(journal_file, capsys):
    journal.append(journal_file, run("c5", a="server died again"))
    assert compare_here("--report", str(journal_file)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == f"trend in {journal_file}: 5 run(s); last latency vs median of the earlier measured runs"
    assert lines[2].split() == ["case", "framework", "runs", "last", "s", "median", "before", "s", "change", "last", "commit"]  # fmt: skip
    assert [line.split() for line in lines[3:6]] == [
        ["a", "sglang", "5", "ERROR", "1.500", "-", "c5"],
        ["b", "sglang", "4", "1.800", "2.100", "-14.3%", "c4"],
        ["new", "sglang", "1", "0.500", "-", "-", "c4"],
    ]
    assert lines[6:] == ["  a (sglang) last run: server died again"]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            ['{"timestamp": "t", "results": []}', "{oops"],
            ":2: invalid JSON: Expecting property name enclosed in double quotes at column 2",
        ),
        (['{"results": []}'], ":1: timestamp: required key is missing"),
        (['{"timestamp": "t", "results": [{"case_id": "a"}]}'], ":1: results.0.framework: required key is missing"),
        (
            ['{"timestamp": "t", "results": [{"case_id": "a", "framework": "x", "latency_s": "fast"}]}'],
            ":1: results.0.latency_s: expected a valid number, unable to parse string as a number, got 'fast'",
        ),
        (["[1, 2]"], ":1: expected an object, got a list"),
    ],
)
def test_a_bad_journal_line_names_the_file_line_and_key(tmp_path, lines, message):
    path = tmp_path / "journal.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DiffperfError) as info:
        journal.read(path)
    assert str(info.value) == f"{path}{message}"


def test_an_unwritable_journal_is_a_clear_error(tmp_path):
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(DiffperfError, match=r"dir\.jsonl: cannot append: Is a directory$"):
        journal.append(tmp_path / "dir.jsonl", run("c1", a=1.0))


def test_append_writes_one_json_line_per_run(tmp_path):
    path = tmp_path / "h.jsonl"
    journal.append(path, run("c1", a=1.0))
    journal.append(path, run("c2", a=2.0))
    assert [json.loads(line)["commit_sha"] for line in path.read_text().splitlines()] == ["c1", "c2"]
