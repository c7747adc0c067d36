"""Time collecting SGLang's 84-scenario H100 file with the plugin (``pytest --co``), per source tree.

    python benchmarks/bench_collection.py [--repeats 9] [--tree NAME=DIR ...]

Each run is a fresh ``python -m pytest --co`` process (``--diffperf=pr_test``, a copy of the vendored
``perf_baselines/`` folder in a temporary folder, as in a user's checkout, ``--diffperf-hardware=h100``, ``--diffperf-server=sglang``), against a
bare ``pytest --co`` of an empty folder with the plugin not loaded (``-p no:diffperf``): the
difference of the medians is the plugin's time (imports, loading and linting the baselines,
building the items). Trees are timed interleaved, round by round, so machine load hits them alike;
a tree is put first on PYTHONPATH (e.g. a checkout of an older commit: ``git worktree add``).
Also printed: which heavy libraries the collection imported.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
H100 = REPO / "tests" / "vendor" / "sglang-data" / "v0.5.23" / "perf_baselines"
HEAVY = ("torch", "skimage", "scipy", "open_clip", "diffusers", "transformers")
PROBE = """
import json, sys, pytest
code = pytest.main(sys.argv[2:])
print(json.dumps({"code": int(code), "heavy": [m for m in sys.argv[1].split(",") if m in sys.modules]}))
"""


def run(tree: Path, folder: Path, args: list[str], ok: tuple[int, ...] = (0,)) -> tuple[float, dict[str, object]]:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-c", PROBE, ",".join(HEAVY), "-c", str(folder / "pytest.ini"), *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    if outcome["code"] not in ok:
        sys.exit(f"collection failed in {tree}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=DIR", help="default: this checkout")
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree) or {"this checkout": str(REPO)}
    folder = Path(tempfile.mkdtemp(prefix="bench-collection-"))
    (folder / "pytest.ini").write_text("[pytest]\n")
    baselines = shutil.copytree(H100, folder / "perf_baselines")  # out of the repo: its tests' conftest stays out
    plugin = ["--co", "-q", "-p", "no:cacheprovider", "--diffperf=pr_test", f"--diffperf-baselines={baselines}"]
    plugin += ["--diffperf-hardware=h100", "--diffperf-server=sglang"]
    bare = ["--co", "-q", "-p", "no:cacheprovider", "-p", "no:diffperf"]
    times: dict[str, list[float]] = {name: [] for name in trees}
    baseline: list[float] = []
    heavy: dict[str, object] = {}
    for _ in range(args.repeats):
        baseline.append(run(REPO, folder, bare, ok=(5,))[0])  # 5: no tests in the empty folder
        for name, tree in trees.items():
            wall, outcome = run(Path(tree), folder, plugin)
            times[name].append(wall)
            heavy[name] = outcome["heavy"]
    base = statistics.median(baseline)
    print(
        f"bare pytest --co: median {base:.3f} s (min {min(baseline):.3f}, max {max(baseline):.3f}), {args.repeats} runs"
    )
    for name, walls in times.items():
        median = statistics.median(walls)
        print(
            f"{name}: collect 84 scenarios: median {median:.3f} s (min {min(walls):.3f}, max {max(walls):.3f}); "
            f"plugin time {median - base:.3f} s; heavy imports: {', '.join(heavy[name]) or 'none'}"  # type: ignore[arg-type]
        )


if __name__ == "__main__":
    main()
