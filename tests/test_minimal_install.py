"""What a plugin-only install (``pip install pytest-diffperf``, no extras) must do without torch,
scikit-image or open_clip: collect SGLang's files against ``sglang serve`` and judge a scenario served
by ``sglang serve`` without importing them, and name the extra when output consistency is asked for.
CI also runs this file in a venv without extras (``.ci/minimal``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import probe
from tests.support.paths import SGLANG_DATA
from tests.support.suite import GENEROUS, tiny_case

EXTRAS = ("torch", "skimage", "open_clip", "scipy", "diffusers", "transformers", "fastapi")


def run_pytest(
    tmp_path: Path, *args: str, block: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> tuple[dict, str]:
    """``pytest ARGS`` under an empty ini (only what the arguments say), with ``block`` unimportable."""
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\n")
    return probe.run_pytest(
        tmp_path, "-c", str(ini), "-p", "no:cacheprovider", *args, watch=EXTRAS, block=block, env=env
    )


def baseline_file(scenarios: dict[str, dict]) -> dict:
    tolerances = dict.fromkeys(("e2e", "denoise_stage", "non_denoise_stage", "denoise_step", "denoise_agg"), 0.1)
    return {"scenarios": scenarios, "tolerances": {"pr_test": tolerances}, "sampling": {"step_fractions": [0.0]}}


def test_sglang_h100_file_collects_without_importing_any_extra(tmp_path):
    outcome, output = run_pytest(
        tmp_path,
        "--co",
        "-q",
        "--diffperf=pr_test",
        f"--diffperf-baselines={SGLANG_DATA / 'v0.5.23' / 'perf_baselines'}",
        "--diffperf-hardware=h100",
        "--diffperf-server=sglang",
    )
    assert outcome == {"code": 0, "loaded": []}, output
    assert "84 tests collected" in output


def test_consistency_without_the_extra_is_one_line_naming_it(tmp_path):
    (tmp_path / "gt").mkdir()
    cases = {"cases": [{"id": "a", "model": "m", "task": "text-to-image", "prompt": "p"}]}
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    (tmp_path / "baselines.json").write_text(json.dumps(baseline_file({})))
    outcome, output = run_pytest(
        tmp_path,
        "--diffperf=pr_test",
        "--diffperf-baselines=baselines.json",
        "--diffperf-cases=cases.json",
        "--diffperf-gt-dir=gt",
        block=("open_clip", "skimage"),
    )
    assert outcome["code"] == 4, output  # a usage error: nothing ran
    message = [line for line in output.splitlines() if "extra" in line]
    absent = [m for m in ("torch", "open_clip", "skimage") if m != "torch" or importlib.util.find_spec(m) is None]
    assert message == [
        f"ERROR: diffperf: consistency: comparing outputs needs the 'consistency' extra ({', '.join(absent)} "
        "missing): pip install 'pytest-diffperf[consistency]'"
    ], output  # torch too where it is not installed (a plugin-only venv)
    assert "Traceback" not in output


def server_python() -> str:
    """An interpreter with the server extra, for the stand-in ``sglang`` (.ci/minimal names the outer one)."""
    python = os.environ.get("DIFFPERF_SERVER_PYTHON") or sys.executable
    probe = subprocess.run([python, "-c", "import diffusers, torch"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"{python} has no server extra to serve the stand-in sglang (set DIFFPERF_SERVER_PYTHON)")
    return python


@pytest.mark.server
def test_a_scenario_served_by_sglang_serve_is_judged_without_importing_any_extra(tmp_path):
    """``--diffperf-server sglang`` runs ``sglang serve`` from PATH; here that is the reference server, which
    takes sglang serve's command line, run by an interpreter that has the server extra."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sglang = bin_dir / "sglang"
    sglang.write_text(f'#!/bin/sh\nexec "{server_python()}" -m pytest_diffperf.refserver "$@"\n')
    sglang.chmod(0o755)
    (tmp_path / "cases.json").write_text(json.dumps({"cases": [tiny_case("tiny")]}))
    (tmp_path / "baselines.json").write_text(json.dumps(baseline_file({"tiny": GENEROUS})))
    env = os.environ | {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    outcome, output = run_pytest(
        tmp_path,
        "--diffperf=pr_test",
        "--diffperf-baselines=baselines.json",
        "--diffperf-cases=cases.json",
        "--diffperf-server=sglang",
        "--diffperf-json=results.json",
        env=env,
    )
    assert outcome == {"code": 0, "loaded": []}, output
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["launcher"] == "sglang"
    assert [(s["scenario"], s["outcome"]) for s in results["scenarios"]] == [("tiny", "pass")], output
    assert results["rows"][0]["e2e_ms"] > 0 and results["scenarios"][0]["measured"]["e2e_ms"] > 0
