"""Time collecting SGLang's 84-scenario H100 file with the plugin (``pytest --co``), per source tree.

    python benchmarks/bench_collection.py [--repeats 9] [--tree NAME=DIR ...] [--python NAME=INTERPRETER ...] [--smoke]

Each run is a fresh ``python -m pytest --co`` process (``--diffperf=pr_test``, a copy of the vendored
``perf_baselines/`` folder in a temporary folder, as in a user's checkout, ``--diffperf-hardware=h100``, ``--diffperf-server=sglang``), against a
bare ``pytest --co`` of an empty folder with the plugin not loaded (``-p no:diffperf``): the
difference of the medians is the plugin's time (imports, loading and linting the baselines,
building the items). Trees are timed interleaved, round by round, so machine load hits them alike;
a tree is put first on PYTHONPATH (e.g. a checkout of an older commit: ``git worktree add``). An
interpreter (``--python``, e.g. a venv's after a plain ``pip install .``) runs its installed plugin,
against its own bare ``pytest --co`` (its own set of pytest plugins).
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


def run(
    python: str, tree: Path | None, folder: Path, args: list[str], ok: tuple[int, ...] = (0,)
) -> tuple[float, dict[str, object]]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    command = [python, "-c", PROBE, ",".join(HEAVY), "-c", str(folder / "pytest.ini"), *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    if outcome["code"] not in ok:
        sys.exit(
            f"collection failed with {python} ({tree or 'installed'}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return wall, outcome


Target = tuple[str, Path | None, str]  # (interpreter, PYTHONPATH tree or None, the bare run's interpreter)


def measure(
    folder: Path, targets: dict[str, Target], repeats: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, object]]:
    """Bare ``pytest --co`` times per interpreter, the plugin's collection times and heavy imports per target,
    in ``folder`` (a copy of the H100 baselines out of the repo: its tests' conftest stays out)."""
    (folder / "pytest.ini").write_text("[pytest]\n")
    baselines = shutil.copytree(H100, folder / "perf_baselines")
    plugin = ["--co", "-q", "-p", "no:cacheprovider", "--diffperf=pr_test", f"--diffperf-baselines={baselines}"]
    plugin += ["--diffperf-hardware=h100", "--diffperf-server=sglang"]
    bare = ["--co", "-q", "-p", "no:cacheprovider", "-p", "no:diffperf"]
    times: dict[str, list[float]] = {name: [] for name in targets}
    bare_times: dict[str, list[float]] = {python: [] for _, _, python in targets.values()}
    heavy: dict[str, object] = {}
    for _ in range(repeats):
        for python, walls in bare_times.items():
            walls.append(run(python, None, folder, bare, ok=(5,))[0])  # 5: no tests in the empty folder
        for name, (python, tree, _) in targets.items():
            wall, outcome = run(python, tree, folder, plugin)
            times[name].append(wall)
            heavy[name] = outcome["heavy"]
    return bare_times, times, heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=DIR", help="default: this checkout")
    parser.add_argument(
        "--python", action="append", default=[], metavar="NAME=INTERPRETER", help="an interpreter's installed plugin"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a few seconds' run at the smallest size (CI checks that the script still runs)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.repeats = 1
    trees = dict(t.split("=", 1) for t in args.tree)
    pythons = dict(t.split("=", 1) for t in args.python)
    if not trees and not pythons:
        trees = {"this checkout": str(REPO)}
    targets: dict[str, Target] = {name: (sys.executable, Path(tree), sys.executable) for name, tree in trees.items()}
    targets |= {name: (python, None, python) for name, python in pythons.items()}
    with tempfile.TemporaryDirectory(prefix="bench-collection-") as tmp:
        bare_times, times, heavy = measure(Path(tmp), targets, args.repeats)
    for python, walls in bare_times.items():
        print(
            f"bare pytest --co ({python}): median {statistics.median(walls):.3f} s "
            f"(min {min(walls):.3f}, max {max(walls):.3f}), {args.repeats} runs"
        )
    for name, walls in times.items():
        median = statistics.median(walls)
        base = statistics.median(bare_times[targets[name][2]])
        print(
            f"{name}: collect 84 scenarios: median {median:.3f} s (min {min(walls):.3f}, max {max(walls):.3f}); "
            f"plugin time {median - base:.3f} s; heavy imports: {', '.join(heavy[name]) or 'none'}"  # type: ignore[arg-type]
        )


if __name__ == "__main__":
    main()
