"""The README's jobs on the bundled suite: verdicts on no change and on injected delays, never on this machine's speed.

Both are judged against a baseline regenerated on this machine first (``--regen-baselines`` into a
copy of the bundled file), so a runner faster or slower than the one that recorded
``data/perf_baselines/cpu.json`` changes nothing. The bundled cases measure 3 requests each, so on
cpu every timing check is judged with the run's noise (pass / fail / inconclusive) and a failing one
is re-measured on fresh servers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.suite import SKIP_OUTPUTS

pytestmark = pytest.mark.server  # starts server processes

REPO = Path(__file__).resolve().parents[2]
# Runs that judge speed alone (SKIP_OUTPUTS): the outputs are compared once, by the pr_test no-change run
# (the README's main job as it is), and comparing them again costs each run seconds of open_clip and torch imports.


def pytest_at_root(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``pytest ARGS`` at the repository root, as a user types it (``env``: variables added)."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    environ = {**os.environ, **(env or {})}
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1500, env=environ)


def scenarios(path: Path) -> dict[str, dict]:
    return {s["scenario"]: s for s in json.loads(path.read_text())["scenarios"]}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    """The bundled baseline file, regenerated on this machine (the bundled file itself left as it is)."""
    bundled = REPO / "data/perf_baselines/cpu.json"
    before = bundled.read_bytes()
    path = tmp_path_factory.mktemp("baseline") / "cpu.json"
    path.write_bytes(before)
    proc = pytest_at_root("--regen-baselines", f"--diffperf-baselines={path}", env=SKIP_OUTPUTS)
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert bundled.read_bytes() == before
    regenerated = json.loads(path.read_text())["scenarios"]
    assert regenerated.keys() == json.loads(before)["scenarios"].keys()
    assert regenerated != json.loads(before)["scenarios"]  # measured here, not the stored figures
    return path


@pytest.mark.parametrize("profile", ["pr_test", "long_term"])
def test_no_change_never_fails_the_performance_checks(profile, baseline, tmp_path):
    results = tmp_path / "results.json"
    proc = pytest_at_root(
        f"--diffperf={profile}",
        f"--diffperf-baselines={baseline}",
        f"--diffperf-json={results}",
        "--diffperf-quiet-wait=10",  # busy beside the other tests: inconclusive (machine busy) soon, not after 120 s
        "--diffperf-remeasure=2",  # an inconclusive one measured again once (the default 3: bench_machine_local)
        env=None if profile == "pr_test" else SKIP_OUTPUTS,
    )
    done = scenarios(results)
    assert len(done) == 7, proc.stdout[-5000:]
    for sid, s in done.items():
        assert s["verdict"] in ("pass", "inconclusive"), (sid, s["message"])
        if profile == "pr_test":  # the outputs are compared: each matches its ground truth
            assert s["consistency"]["status"] == "pass", s["consistency"]["message"]
        assert s["noise"] is not None and s["noise"]["requests"] >= 3, sid  # judged with the run's noise
        if s["verdict"] == "inconclusive":  # by the noise, or a fail measured while the machine was busy
            busy = (s.get("interference") or {}).get("effect") == "inconclusive"
            assert busy or "the run's noise supports neither a pass nor a fail" in s["message"], (sid, s["message"])
    inconclusive = sum(s["verdict"] == "inconclusive" for s in done.values())
    if inconclusive:
        assert f"{inconclusive} inconclusive" in proc.stdout.splitlines()[-1]  # shown as such, not as passed
    perf_failures = [line for line in proc.stdout.splitlines() if line.startswith("PERFORMANCE:")]
    assert not perf_failures, proc.stdout[-5000:]


def test_the_bundled_videos_match_their_ground_truth_on_another_cpus_kernels(tmp_path):
    """Ground truth recorded on one CPU holds on another. ATen's portable kernels (no AVX) stand in for a CPU
    of another instruction set: they change a few pixels of some frames by 1. The video cases ask for
    ``output_compression`` 100 (CRF 0), as SGLang's own frame-compared Wan case does, so the encoder passes
    that on as it is; at SGLang's default CRF 25 it turned it into mismatches of 0.96 SSIM on noise-like
    frames (a CI runner of another CPU, 2026-12-04)."""
    results = tmp_path / "results.json"
    proc = pytest_at_root(
        "--diffperf=pr_test",
        f"--diffperf-json={results}",
        "--diffperf-remeasure=1",  # the outputs are the point: one server, whatever its timings
        "--diffperf-busy-share=off",
        "-k",
        "wan_tiny_t2v",
        env={"ATEN_CPU_CAPABILITY": "default"},
    )
    consistency = scenarios(results)["wan_tiny_t2v"]["consistency"]
    assert consistency["status"] == "pass", proc.stdout[-5000:]
    assert consistency["integrity"] == "verified"  # compared with the bundled ground truth's own files


def test_a_doubled_e2e_fails_the_bundled_suite_with_the_denoising_stage_named(baseline, tmp_path):
    """Each scenario's candidate sleeps its baseline e2e inside DenoisingStage (e2e about 2x).

    Each is judged on one server: DenoisingStage then takes 2-15x its stored time, past its limit by
    more than one server's noise, while e2e may be judged by point value. Never a pass; the suite of
    seven fails. (A fail confirmed on fresh servers: test_static_noise_e2e's tripled e2e.)
    """
    baselines = json.loads(baseline.read_text())["scenarios"]
    cases = json.loads((REPO / "data/cases.json").read_text())
    delays = {case["id"]: baselines[case["id"]]["expected_e2e_ms"] for case in cases["cases"]}
    for case in cases["cases"]:
        case["frameworks"]["reference"]["serve_args"] += f" --inject-delay DenoisingStage={delays[case['id']]}"
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    results = tmp_path / "results.json"
    proc = pytest_at_root(
        "--diffperf=pr_test",
        f"--diffperf-baselines={baseline}",
        f"--diffperf-cases={tmp_path / 'cases.json'}",
        f"--diffperf-json={results}",
        "--diffperf-busy-share=off",  # the machine is shared with other jobs (benchmarks/bench_interference.py)
        # Reported on its first server: confirming a fail on fresh servers is test_static_noise_e2e's tripled test
        "--diffperf-remeasure=1",
        env=SKIP_OUTPUTS,
    )
    assert proc.returncode == 1, proc.stdout[-5000:]
    done = scenarios(results)
    assert len(done) == 7
    assert not [sid for sid, s in done.items() if s["verdict"] == "pass"], proc.stdout[-5000:]
    failed = {sid: s for sid, s in done.items() if s["verdict"] == "fail"}
    assert failed, proc.stdout[-5000:]
    for sid, s in failed.items():
        assert s["noise"]["attempts"] == 1
        attribution = s["noise"]["attribution"]
        if attribution is not None:  # e2e failed: the stages that explain it are named
            # Named, not necessarily first: on a busy runner the CPU-bound stages slow too, and wan's
            # decoding (92 % of its e2e) once changed by more ms than the sleep (CI at de8f654).
            assert "DenoisingStage" in attribution["named"], (sid, s["message"])
            denoising = next(st for st in attribution["stages"] if st["stage"] == "DenoisingStage")
            assert denoising["delta_ms"] > delays[sid] / 2, (sid, s["message"])  # the sleep, found in its stage
            assert "against the stored baseline: e2e +" in s["message"] and "DenoisingStage +" in s["message"]
        else:  # e2e inconclusive (a short stage slowed inside a long e2e): the stage's own check failed
            failing = [c["name"] for c in s["noise"]["checks"] if c["verdict"] == "fail"]
            assert "stage[DenoisingStage]" in failing, (sid, s["message"])


def test_the_readmes_a_b_example_names_the_stage(tmp_path):
    """The README's second job (on one scenario): base and candidate side by side, the candidate slowed."""
    readme = (REPO / "README.md").read_text()
    command = next(line for line in readme.splitlines() if "--diffperf-base=current" in line)
    assert command.startswith("pytest --diffperf=pr_test --diffperf-base=current --diffperf-candidate=")
    results = tmp_path / "results.json"
    proc = pytest_at_root(
        "--diffperf=pr_test",
        "--diffperf-base=current",
        "--diffperf-candidate=args=--inject-delay DenoisingStage=300",
        f"--diffperf-json={results}",
        "-k",
        "flux_kontext_tiny_edit",
    )
    assert "args=--inject-delay DenoisingStage=300" in command
    assert proc.returncode == 1, proc.stdout[-5000:]
    s = scenarios(results)["flux_kontext_tiny_edit"]
    assert s["ab"]["verdict"] == "regressed"
    assert s["ab"]["attribution"]["named"][0] == "DenoisingStage"
    assert "regressed: e2e +" in proc.stdout and "DenoisingStage +" in proc.stdout and "explains" in proc.stdout
