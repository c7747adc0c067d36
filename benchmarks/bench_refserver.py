"""Benchmark the bundled CPU reference server: load time, end-to-end latency, stage and step times.

For each model a fresh ``diffperf-refserver serve`` process is started; load time is the load
marker's monotonic timestamp minus the spawn time. After the startup warmup, ``--repeats``
requests run at the bundled-suite shapes; the table gives medians and spread, and the per-stage
and per-step medians come from the server's own ``performance.log`` records.

Then ``--starts`` reference servers are started on their own and as many forked from a fork server
(``diffperf-refserver forkserver``, as the test suite does), interleaved: the time from spawn to
``/health`` 200, and the CPU time of every process of the start until then.

    python benchmarks/bench_refserver.py [--repeats 7] [--threads 1] [--models tiny/flux-t2i ...] [--starts 5]
        [--json out.json] [--smoke]

``--smoke``: tiny/flux-t2i, one request, one start of each kind (CI checks that the script still runs).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import requests

from pytest_diffperf.launchers import ReferenceLauncher, ServerSpec
from pytest_diffperf.protocol import (
    FORKSERVER_ENV,
    HEALTH_PATH,
    IMAGES_PATH,
    LOAD_MARKER,
    PERF_LOG_FILE,
    STANDARD_STAGES,
    VIDEOS_PATH,
    PerfRecord,
    parse_load_marker,
)
from pytest_diffperf.serving.process import free_port

WORKLOADS = {
    "tiny/flux-t2i": {
        "prompt": "a lighthouse on a cliff at sunset",
        "size": "256x256",
        "num_inference_steps": 12,
    },
    "tiny/sd-t2i": {
        "prompt": "a lighthouse on a cliff at sunset",
        "size": "256x256",
        "num_inference_steps": 12,
    },
    "tiny/wan-t2v": {
        "prompt": "waves rolling onto a beach",
        "size": "128x128",
        "num_frames": 9,
        "num_inference_steps": 6,
    },
}


def _one_request(url: str, model: str, body: dict[str, Any]) -> tuple[str, float]:
    """Run one request to completion; returns (request id, client-side seconds)."""
    t0 = time.perf_counter()
    if model.endswith("t2v"):
        job = requests.post(url + VIDEOS_PATH, json=body, timeout=300).json()
        while job["status"] not in ("completed", "failed"):
            time.sleep(0.01)
            job = requests.get(f"{url}{VIDEOS_PATH}/{job['id']}", timeout=30).json()
        assert job["status"] == "completed", job
        requests.get(f"{url}{VIDEOS_PATH}/{job['id']}/content", timeout=30).raise_for_status()
        return job["id"], time.perf_counter() - t0
    resp = requests.post(url + IMAGES_PATH, json=body, timeout=300)
    resp.raise_for_status()
    return resp.json()["id"], time.perf_counter() - t0


def _wait_healthy(url: str) -> None:
    """Poll ``/health`` until it answers 200 (not listening yet counts as not ready)."""
    while True:
        try:
            if requests.get(url + HEALTH_PATH, timeout=5).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.02)


def bench_model(model: str, repeats: int, threads: int) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-refserver-"))
    port = free_port()
    # the command and environment the plugin starts it with (ReferenceLauncher)
    # --memory-snapshots always: the CPU server then reports host memory (SGLang does so only on a device)
    spec = ServerSpec(
        "reference", model, f"--log-level warning --num-threads {threads} --memory-snapshots always", (), 1
    )
    launcher = ReferenceLauncher()
    env = {**os.environ, **launcher.env(spec, workdir), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    cmd = launcher.command(spec, port)
    spawn_ns = time.monotonic_ns()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        marker_ns = None
        assert proc.stdout is not None
        for line in proc.stdout:
            marker_ns = parse_load_marker(line) if LOAD_MARKER in line else None
            if marker_ns:
                break
        if marker_ns is None:
            raise RuntimeError(f"{model}: server exited before the load marker")
        _wait_healthy(url)
        ready_ns = time.monotonic_ns()
        body = WORKLOADS[model]
        ids, wall = [], []
        for _ in range(repeats):
            request_id, seconds = _one_request(url, model, body)
            ids.append(request_id)
            wall.append(seconds * 1000)
        lines = (workdir / PERF_LOG_FILE).read_text().splitlines()
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    records = {r.request_id: r for r in map(PerfRecord.model_validate_json, lines)}
    recs = [records[i] for i in ids]
    return {
        "model": model,
        "workload": body,
        "load_ms": (marker_ns - spawn_ns) / 1e6,
        "ready_ms": (ready_ns - spawn_ns) / 1e6,
        "e2e_ms": wall,
        "total_ms": [r.total_duration_ms for r in recs],
        "stages_ms": {
            name: statistics.median(next(s.execution_time_ms for s in r.stages if s.name == name) for r in recs)
            for name in STANDARD_STAGES
        },
        "step_ms": statistics.median(ms for r in recs for ms in r.steps),
        "step_cv": statistics.pstdev([ms for r in recs for ms in r.steps])
        / statistics.mean([ms for r in recs for ms in r.steps]),
        "runtime_peak_mb": max(r.memory_snapshots["runtime_peak"].peak_host_anon_mb for r in recs),
    }


SERVING = re.compile(r"\(pid (\d+),")  # "[refserver] serving tiny/flux-t2i at http://... (pid 123, 1 thread(s))"


def _start(env: dict[str, str]) -> tuple[float, float]:
    """One tiny/flux-t2i server started and stopped: (seconds from spawn to /health 200, CPU-s of its processes)."""
    port = free_port()
    spec = ServerSpec("reference", "tiny/flux-t2i", "--log-level warning", (), 1)
    cmd = ReferenceLauncher().command(spec, port)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert proc.stdout is not None
        server = next((int(m.group(1)) for line in proc.stdout if (m := SERVING.search(line))), None)
        if server is None:
            raise RuntimeError("the server exited before it said it was serving")
        _wait_healthy(f"http://127.0.0.1:{port}")
        ready = time.perf_counter() - t0
        cpu = sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in {proc.pid, server})
    finally:
        proc.terminate()
        proc.wait()
    return ready, cpu


def bench_starts(starts: int) -> dict[str, dict[str, list[float]]]:
    """``starts`` servers on their own and as many forked, interleaved (the fork server's own start not counted)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-forks-"))
    base = {k: v for k, v in os.environ.items() if k != FORKSERVER_ENV} | {"HF_HUB_OFFLINE": "1"}
    forks = subprocess.Popen(
        [sys.executable, "-m", "pytest_diffperf.refserver", "forkserver", "--socket", str(folder / "sock")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=base,
    )
    figures: dict[str, dict[str, list[float]]] = {kind: {"ready_s": [], "cpu_s": []} for kind in ("own", "forked")}
    try:
        assert forks.stdout is not None
        next(line for line in forks.stdout if "fork server ready" in line)
        forked = {**base, FORKSERVER_ENV: f"{forks.pid}:{folder / 'sock'}"}
        for _ in range(starts):
            for kind, env in (("own", base), ("forked", forked)):
                ready, cpu = _start(env)
                figures[kind]["ready_s"].append(ready)
                figures[kind]["cpu_s"].append(cpu)
    finally:
        forks.terminate()
        forks.wait()
        shutil.rmtree(folder, ignore_errors=True)
    return figures


def print_starts(figures: dict[str, dict[str, list[float]]]) -> None:
    print("| start | n | ready s, median [min-max] | CPU-s to ready, median [min-max] |")
    print("|---|---|---|---|")
    for kind, label in (("own", "on its own"), ("forked", "forked")):
        ready, cpu = figures[kind]["ready_s"], figures[kind]["cpu_s"]
        print(
            f"| {label} | {len(ready)} | {statistics.median(ready):.2f} [{min(ready):.2f}-{max(ready):.2f}] "
            f"| {statistics.median(cpu):.2f} [{min(cpu):.2f}-{max(cpu):.2f}] |"
        )
    ratio = [
        statistics.median(figures["own"][k]) / statistics.median(figures["forked"][k]) for k in ("ready_s", "cpu_s")
    ]
    print(f"| own / forked | | {ratio[0]:.1f}x | {ratio[1]:.1f}x |")


def _spread(values: list[float]) -> str:
    med = statistics.median(values)
    cv = statistics.pstdev(values) / statistics.mean(values) if len(values) > 1 else 0.0
    return f"{med:8.1f} [{min(values):.0f}-{max(values):.0f}, cv {cv:.0%}]"


def print_table(results: list[dict[str, Any]]) -> None:
    print(
        f"{'model':15} {'load ms':>8} {'ready ms':>9}  {'e2e ms median [min-max, cv]':32} "
        f"{'server total ms':32} {'step ms':>8}"
    )
    for r in results:
        print(
            f"{r['model']:15} {r['load_ms']:8.0f} {r['ready_ms']:9.0f}  {_spread(r['e2e_ms']):32} "
            f"{_spread(r['total_ms']):32} {r['step_ms']:8.1f}"
        )
    print()
    short = [name.removesuffix("Stage") for name in STANDARD_STAGES]
    print(f"{'stage medians (ms)':19}" + "".join(f"{s:>20}" for s in short))
    for r in results:
        print(f"{r['model']:19}" + "".join(f"{r['stages_ms'][n]:20.2f}" for n in STANDARD_STAGES))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--starts", type=int, default=5, help="server starts of each kind (0: none)")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a few seconds' run at the smallest size (CI checks that the script still runs)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.models, args.repeats, args.starts = ["tiny/flux-t2i"], 1, 1
    results = [bench_model(m, args.repeats, args.threads) for m in args.models]
    print_table(results)
    starts = bench_starts(args.starts) if args.starts else None
    if starts:
        print()
        print_starts(starts)
    if args.json:
        args.json.write_text(json.dumps({"models": results, "starts": starts}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
