"""The bundled suite's timing noise on this machine, and baselines sized from it.

Measures every scenario of ``data/cases.json`` on ``--processes`` fresh reference-server processes
(the scenarios of one server group share a process; groups alternate, so a slow phase of the
machine spreads over all of them), ``--requests`` measured requests each after the case's warmups.
A quiet CI machine is what the baselines stand for: before each process the script waits (up to
``--wait-s``) until the 1-minute load average is below ``--quiet-load``, and records it.
Reports per scenario the median e2e, the spread of a fresh process's median (sd of the log process
medians, the part static mode's ``process`` prior stands for) and of single requests around their
process's median (``within``), for e2e and the denoising stage.

With ``--write`` the expected values of ``data/perf_baselines/cpu.json`` become the median over
processes of each process's median (stages, every step, e2e, the step aggregates, load time;
memory peaks: the median of the processes' peaks); tolerances and the rest of the file are kept.

    nice python benchmarks/bench_bundled_noise.py --processes 6 --requests 5 --json noise.json [--write]

``--smoke``: the first server group only, 1 process x 1 request, no waiting for a quiet machine,
nothing written (CI checks that the script still runs).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from pytest_diffperf.cases import Case, load_cases
from pytest_diffperf.perf.measurement import Measurement
from pytest_diffperf.protocol import DENOISING_STAGE, PER_FRAME_STAGE
from pytest_diffperf.serving.launchers import ServerSpec, get_launcher
from pytest_diffperf.serving.measure import measure
from pytest_diffperf.serving.pool import ServerPool

REPO = Path(__file__).resolve().parent.parent
BASELINES = REPO / "data" / "perf_baselines" / "cpu.json"


def median_of_medians(per_process: list[list[float]]) -> float:
    return statistics.median(statistics.median(xs) for xs in per_process if xs)


def spread(per_process: list[list[float]]) -> tuple[float, float]:
    """(sd of log process medians, robust sd of log requests around their process median)."""
    medians = [math.log(statistics.median(xs)) for xs in per_process if xs]
    residuals = [abs(math.log(x) - m) for xs, m in zip(per_process, medians, strict=True) for x in xs]
    within = 1.4826 * statistics.median(residuals) if residuals else math.nan
    return (statistics.stdev(medians) if len(medians) > 1 else math.nan), within


def scenario_entry(runs: list[Measurement], old: dict[str, Any]) -> dict[str, Any]:
    """The baseline of one scenario: medians over processes of each process's medians."""
    stages = sorted({s for m in runs for st in m.stages for s in st})
    steps = max(len(s) for m in runs for s in m.steps)
    entry: dict[str, Any] = {
        "stages_ms": {
            s: round(median_of_medians([[st[s] for st in m.stages if s in st] for m in runs]), 2) for s in stages
        },
        "denoise_step_ms": {
            str(i): round(median_of_medians([[s[i] for s in m.steps if len(s) > i] for m in runs]), 2)
            for i in range(steps)
        },
        "expected_e2e_ms": round(median_of_medians([list(m.e2e_ms) for m in runs]), 2),
        "expected_avg_denoise_ms": round(median_of_medians([[statistics.fmean(s) for s in m.steps] for m in runs]), 2),
        "expected_median_denoise_ms": round(
            median_of_medians([[statistics.median(s) for s in m.steps] for m in runs]), 2
        ),
    }
    if PER_FRAME_STAGE in old.get("stages_ms", {}):
        frames = runs[0].num_frames or 1
        entry["stages_ms"][PER_FRAME_STAGE] = round(entry["expected_e2e_ms"] / frames, 2)
    loads = [x for m in runs for x in m.load_ms]
    if loads:
        entry["expected_load_ms"] = round(statistics.median(loads), 2)
    for key in ("load_peak_host_anon_mb", "runtime_peak_host_anon_mb"):
        peaks = [max(m.memory[key]) for m in runs if m.memory.get(key)]
        if peaks:
            entry[key] = round(statistics.median(peaks), 2)
    if "estimated_full_test_time_s" in old:
        entry["estimated_full_test_time_s"] = old["estimated_full_test_time_s"]
    return entry


def wait_quiet(load: float, wait_s: float) -> float:
    """Wait until the 1-minute load average is below ``load`` (at most ``wait_s``); returns it."""
    deadline = time.monotonic() + wait_s
    while os.getloadavg()[0] >= load and time.monotonic() < deadline:
        time.sleep(5)
    return os.getloadavg()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=6, help="fresh processes per server group")
    ap.add_argument("--requests", type=int, default=5, help="measured requests per scenario and process")
    ap.add_argument("--json", type=Path, help="write the figures and the per-process medians here")
    ap.add_argument("--write", action="store_true", help="write the measured expected values into cpu.json")
    ap.add_argument("--quiet-load", type=float, default=1.6, help="start a process only below this load average")
    ap.add_argument("--wait-s", type=float, default=900, help="longest wait for a quiet machine per process")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="a few seconds' run at the smallest size (CI checks that the script still runs)",
    )
    a = ap.parse_args()
    if a.smoke:
        a.processes, a.requests, a.wait_s, a.write = 1, 1, 0.0, False
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the servers on kill, too
    cases = load_cases(REPO / "data" / "cases.json")
    launcher = get_launcher("reference")
    groups: dict[ServerSpec, list[Case]] = defaultdict(list)
    for case in cases.values():
        groups[ServerSpec.for_case(case, launcher.name)].append(
            case.model_copy(update={"perf_repeat_requests": a.requests})
        )
    if a.smoke:
        groups = dict(list(groups.items())[:1])
    runs: dict[str, list[Measurement]] = defaultdict(list)
    loads: list[float] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-noise-") as tmp:
        pool = ServerPool(Path(tmp), 600)
        try:
            for p in range(a.processes):
                for spec, group in groups.items():
                    loads.append(wait_quiet(a.quiet_load, a.wait_s))
                    server = pool.get(spec)
                    for case in group:
                        samples = measure(server, launcher, case, case.timeout_s or 600)
                        records = [s.record for s in samples if s.record is not None]
                        runs[case.id].append(
                            Measurement.from_records(
                                records, load_ms=server.load_ms, num_frames=case.num_frames, is_video=case.is_video
                            )
                        )
                    pool.release()
                print(f"process round {p + 1}/{a.processes} done ({time.monotonic() - started:.0f} s)", flush=True)
        finally:
            pool.release()
    print(f"\n{a.processes} fresh processes per group x {a.requests} requests, {time.monotonic() - started:.0f} s")
    print(
        f"load average before each process: {min(loads):.2f}-{max(loads):.2f} (median {statistics.median(loads):.2f})\n"
    )
    print(
        "| scenario | e2e ms (median of process medians) | e2e process sd | e2e within sd | DenoisingStage ms | denoise process sd | denoise within sd |"
    )
    print("|---|---|---|---|---|---|---|")
    figures: dict[str, Any] = {}
    for sid, ms in runs.items():
        e2e = [list(m.e2e_ms) for m in ms]
        den = [[st[DENOISING_STAGE] for st in m.stages if DENOISING_STAGE in st] for m in ms]
        (pe, we), (pd, wd) = spread(e2e), spread(den)
        figures[sid] = {
            "e2e_ms": median_of_medians(e2e),
            "e2e_process_sd": pe,
            "e2e_within_sd": we,
            "denoise_ms": median_of_medians(den),
            "denoise_process_sd": pd,
            "denoise_within_sd": wd,
            "process_e2e_medians": [statistics.median(x) for x in e2e],
        }
        print(
            f"| {sid} | {figures[sid]['e2e_ms']:.1f} | {pe:.3f} | {we:.3f} | {figures[sid]['denoise_ms']:.1f} | {pd:.3f} | {wd:.3f} |"
        )
    if a.json:
        a.json.write_text(
            json.dumps({"processes": a.processes, "requests": a.requests, "scenarios": figures}, indent=1)
        )
    if a.write:
        doc = json.loads(BASELINES.read_text())
        for sid, ms in runs.items():
            doc["scenarios"][sid] = scenario_entry(ms, doc["scenarios"].get(sid, {}))
        BASELINES.write_text(json.dumps(doc, indent=4) + "\n")
        print(f"\nwrote {BASELINES}")


if __name__ == "__main__":
    main()
