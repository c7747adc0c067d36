"""Every benchmark still runs: each ``benchmarks/*.py --smoke`` (seconds) exits 0 and prints its table.

The figures are not checked (this machine's speed proves nothing); a benchmark that no longer runs
against today's code is. A new benchmark needs a ``--smoke`` size and a row here.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOISE_STUDY = REPO.parent / "shared" / "noise-study" / "data"
SERVER = pytest.mark.server  # starts reference-server processes

# benchmark -> (a line of its table, marks)
SMOKES = {
    "bench_baselines": ("scenarios,", ()),
    "bench_collection": ("plugin time", ()),
    "bench_consistency": ("ratio", ()),
    "bench_suite": ("| slowest tests (", ()),
    "bench_verdicts": (
        "| set | metric |",
        (pytest.mark.skipif(not NOISE_STUDY.is_dir(), reason="../shared/noise-study/data is absent"),),
    ),
    "bench_refserver": ("stage medians (ms)", (SERVER,)),
    "bench_bundled_noise": ("| scenario | e2e ms", (SERVER,)),
    "bench_bundled_suite": ("req overhead ms", (SERVER,)),
}


def test_the_readme_ci_and_bench_suite_share_the_test_commands():
    spec = importlib.util.spec_from_file_location("bench_suite", REPO / "benchmarks" / "bench_suite.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    readme = (REPO / "README.md").read_text()
    assert f"pytest {shlex.join(bench.FULL)} " in readme and f"pytest {shlex.join(bench.FAST)} " in readme
    assert f"\npython3 -m pytest {shlex.join(bench.FULL)}\n" in (REPO / ".ci" / "run").read_text()


def test_every_benchmark_has_a_smoke_run():
    assert sorted(p.stem for p in (REPO / "benchmarks").glob("*.py")) == sorted(SMOKES)


@pytest.mark.parametrize(
    ("name", "table"), [pytest.param(name, table, marks=marks, id=name) for name, (table, marks) in SMOKES.items()]
)
def test_smoke_run_prints_its_table(name: str, table: str):
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / f"{name}.py"), "--smoke"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert table in proc.stdout, proc.stdout[-3000:]
