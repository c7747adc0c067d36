"""Every benchmark still runs: each ``benchmarks/*.py --smoke`` (seconds) exits 0 and prints its table.

The figures are not checked (this machine's speed proves nothing); a benchmark that no longer runs
against today's code is. A new benchmark needs a ``--smoke`` size and a row here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# reference servers, or seconds of torch, pytest or simulation start-up: out of the fast tests
SERVER = pytest.mark.server

# benchmark -> (a line of its table, marks)
SMOKES = {
    "bench_baselines": ("scenarios,", ()),
    "bench_collection": ("plugin time", (SERVER,)),
    "bench_consistency": ("ratio", (SERVER,)),
    "bench_suite": ("| slowest tests (", (SERVER,)),
    "bench_verdicts": ("| set | metric |", (SERVER,)),
    "bench_refserver": ("| own / forked |", (SERVER,)),
    "bench_bundled_noise": ("| scenario | e2e ms", (SERVER,)),
    "bench_bundled_suite": ("req overhead ms", (SERVER,)),
    "bench_machine_local": ("trial 1: 2x: ", (SERVER,)),
    "bench_interference": ("flux_kontext_tiny_edit: ", (SERVER,)),
    "bench_busy": ("| slowdown | burners | fail | inconclusive | pass |", (SERVER,)),
    "bench_ab_cost": ("| mode | wall s |", (SERVER,)),
    "bench_ci_cost": ("static: ", ()),
    "bench_real_server": ("scenario_overhead_ms", (SERVER,)),
}


def run_benchmark(name: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """``python benchmarks/NAME.py ARGS`` at the repo root, with this checkout first on the path."""
    return subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / f"{name}.py"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])},
    )


def test_the_readme_ci_and_bench_suite_share_the_test_commands():
    spec = importlib.util.spec_from_file_location("bench_suite", REPO / "benchmarks" / "bench_suite.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    readme = (REPO / "README.md").read_text()
    for args in (bench.FULL, bench.FAST):  # the whole command: followed by a space or the code span's end
        assert re.search(re.escape(f"pytest {shlex.join(args)}") + r"[ `]", readme), args
    ci = (REPO / ".ci" / "run").read_text()
    assert f"\npython3 -m pytest {shlex.join(bench.FULL)}\n" in ci  # the whole suite, in the development venv
    assert '\nbash .ci/readme -m "not server"\n' in ci  # the fast tests in the README's venv, built from scratch
    assert f"\npytest {shlex.join(bench.FULL)} " in (REPO / ".ci" / "readme").read_text()


def test_every_benchmark_has_a_smoke_run():
    assert sorted(p.stem for p in (REPO / "benchmarks").glob("*.py")) == sorted(SMOKES)


@pytest.mark.parametrize(
    ("name", "table"), [pytest.param(name, table, marks=marks, id=name) for name, (table, marks) in SMOKES.items()]
)
def test_smoke_run_prints_its_table(name: str, table: str):
    proc = run_benchmark(name, "--smoke", timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert table in proc.stdout, proc.stdout[-3000:]


def test_the_current_figures_are_regenerated_in_place(tmp_path: Path):
    """scripts/benchmark_figures.py rewrites one benchmark's block of the section; what follows it stays."""
    doc = tmp_path / "benchmarks.md"
    original = (REPO / "docs" / "benchmarks.md").read_text()
    doc.write_text(original)
    command = [sys.executable, str(REPO / "scripts" / "benchmark_figures.py"), "--smoke", "--only", "bench_baselines"]
    proc = subprocess.run([*command, f"--doc={doc}"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = doc.read_text()
    assert text.split("<!-- /current figures -->")[1] == original.split("<!-- /current figures -->")[1]
    (block,) = re.findall(r"(?s)<!-- figures: bench_baselines -->.*?<!-- /figures: bench_baselines -->", text)
    assert "`python benchmarks/bench_baselines.py --smoke` at " in block and "1 repeats" in block


def test_every_section_the_repository_cites_in_the_benchmark_pages_is_there():
    """A citation such as ``docs/benchmarks.md, "A/B cost"`` names the start of a heading of that page (the
    current figures or the archive): moving a section from one page to the other moves its citations too."""
    cite = re.compile(r"(benchmarks(?:-archive)?\.md)`?,?\s+\"([^\"]+)\"")
    headings = {
        page: [
            line.lstrip("#").strip() for line in (REPO / "docs" / page).read_text().splitlines() if line.startswith("#")
        ]
        for page in ("benchmarks.md", "benchmarks-archive.md")
    }
    files = [*REPO.glob("*.md"), *(REPO / "docs").glob("*.md"), *REPO.glob("pytest_diffperf/**/*.py")]
    files += [*REPO.glob("benchmarks/**/*.py"), *REPO.glob("tests/**/*.py"), *REPO.glob("scripts/**/*.py")]
    cited = [(path, m[1], " ".join(m[2].split())) for path in files for m in cite.finditer(path.read_text())]
    assert len(cited) > 10
    missing = [(str(path.relative_to(REPO)), page, name) for path, page, name in cited if not any(
        h.startswith(name) for h in headings[page])]  # fmt: skip
    assert not missing


def test_the_busy_table_of_saved_runs_is_the_one_in_the_docs():
    """``bench_busy.py --table`` merges saved runs per load: the three runs of 2026-12-06 after the CPU-growth fix
    give the ten-run table docs/benchmarks.md shows for them."""
    commits = ("2070867", "f8fb344", "bef43f4")
    saved = [REPO / f"benchmarks/results/bench_busy-2026-12-06-{commit}.json.gz" for commit in commits]
    proc = run_benchmark("bench_busy", "--table", *map(str, saved), timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows = proc.stdout.splitlines()
    assert len(rows) == 2 + 15 and "| x2 | 1 | 10 | 0 | 0 | 10 | 1.6-4.1 | 50%-72% |" in rows, proc.stdout
    doc = (REPO / "docs/benchmarks.md").read_text()
    assert all(f"  {row}\n" in doc for row in rows), proc.stdout


def test_a_file_that_is_no_saved_busy_run_is_one_line(tmp_path: Path):
    (tmp_path / "other.json").write_text('{"scenarios": []}')
    why = {"missing.json": "FileNotFoundError(2, 'No such file or directory')", "other.json": "KeyError('runs')"}
    for name, cause in why.items():
        proc = run_benchmark("bench_busy", "--table", str(tmp_path / name), timeout=60)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        said = f"bench_busy: {tmp_path / name}: not a results file of bench_busy.py --json ({cause})"
        assert proc.stderr.strip().splitlines() == [said]
