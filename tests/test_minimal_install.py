"""What a plugin-only install (``pip install pytest-diffperf``, no extras) must do without torch,
scikit-image or open_clip: collect SGLang's files against ``sglang serve`` without importing them, and
name the extra when output consistency is asked for. CI also runs this file in a venv without extras.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from tests.support.paths import SGLANG_DATA

EXTRAS = ("torch", "skimage", "open_clip", "scipy", "diffusers", "transformers", "fastapi")
PROBE = """
import json, sys
for name in sys.argv[2].split(",") if sys.argv[2] else []:
    sys.modules[name] = None  # as if the extra were not installed: importing it raises ImportError
import pytest
code = pytest.main(sys.argv[3:])
print(json.dumps({"code": int(code), "loaded": [m for m in sys.argv[1].split(",") if sys.modules.get(m)]}))
"""


def run_pytest(tmp_path: Path, *args: str, block: tuple[str, ...] = ()) -> tuple[dict, str]:
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\n")  # not the repo's ini: only what the arguments say
    argv = [sys.executable, "-c", PROBE, ",".join(EXTRAS), ",".join(block), "-c", str(ini), "-p", "no:cacheprovider"]
    done = subprocess.run([*argv, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    *output, last = done.stdout.strip().splitlines()
    return json.loads(last), "\n".join(output) + done.stderr


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
    baselines = {"scenarios": {}, "tolerances": {"pr_test": dict.fromkeys(
        ("e2e", "denoise_stage", "non_denoise_stage", "denoise_step", "denoise_agg"), 0.1)},
        "sampling": {"step_fractions": [0.0]}}  # fmt: skip
    (tmp_path / "baselines.json").write_text(json.dumps(baselines))
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
