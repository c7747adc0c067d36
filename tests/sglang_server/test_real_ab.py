"""A/B against SGLang's real server on this CPU: a real code change in SGLang comes out ``regressed`` naming its
stage; the same build against itself never does.

The candidate is a copy of the installed ``sglang`` package whose ``DenoisingStage.forward`` sleeps 0.4 s (about
+40 % of a 1 s request), served with ``--diffperf-candidate=pythonpath=COPY``: its ``sglang serve`` imports the
copy. Process pairs are started one at a time (``--diffperf-ab-prestart=0``): two SGLang servers load on the two
cores at once, not eight. Both tests judge with this server class's calibrated priors (``data/sglang_cpu/noise.json``,
two quiet A/A runs), which the run's header names; a run measured busy widens them x4. A calibration made busy is no
bound for the next busy run (docs/verdicts.md): with one taken unwidened the A/A test came out ``improved`` -73.5 %.
"""

from __future__ import annotations

import json

import pytest

from tests.support.sglang_server import (
    BASELINES,
    MODELS_ENV,
    NOISE,
    SCENARIO,
    bundled_args,
    candidate_package,
    models_dir,
    requires_sglang,
    run_pytest,
)

pytestmark = [pytest.mark.server, pytest.mark.sglang_server, requires_sglang]

AB = ("--diffperf-base=current", "--diffperf-ab-prestart=0", "--diffperf-json=results.json", "--diffperf-log-dir=logs")
CALIBRATED = (f"--diffperf-noise={NOISE}",)
HEADER = f"diffperf: noise priors: {NOISE} (runner class "  # the calibration file in force, named
AA_BUDGET = ("--diffperf-ab-max-process-pairs=3",)  # an A/A run may use every pair it is allowed: 3 keeps it short


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return models_dir(tmp_path_factory)


def scenario_of(cwd) -> dict:
    (scenario,) = json.loads((cwd / "results.json").read_text())["scenarios"]
    return scenario


def test_a_real_change_in_sglangs_denoising_stage_is_regressed_and_named(tmp_path, models):
    candidate = candidate_package(tmp_path / "candidate")
    args = bundled_args(BASELINES, *AB, *CALIBRATED, f"--diffperf-candidate=pythonpath={candidate}")
    done = run_pytest(tmp_path, *args, env={MODELS_ENV: str(models)})
    out = done.stdout + done.stderr
    ab = scenario_of(tmp_path)["ab"]
    assert HEADER in out, out
    assert ab["verdict"] == "regressed", out
    assert ab["attribution"]["named"][0] == "DenoisingStage", ab["attribution"]
    # the headline leads with e2e, or on a busy machine (noise priors x4) with the stage that regressed alone
    assert f"::{SCENARIO} - regressed: " in out and "DenoisingStage +" in out, out
    assert done.returncode == 1
    sides = {(s["side"], s["pid"]) for s in ab["servers"]}
    assert {side for side, _ in sides} == {"base", "candidate"} and len(sides) == len(ab["servers"])


def test_the_same_build_against_itself_is_never_regressed(tmp_path, models):
    done = run_pytest(tmp_path, *bundled_args(BASELINES, *AB, *AA_BUDGET, *CALIBRATED), env={MODELS_ENV: str(models)})
    out = done.stdout + done.stderr
    ab = scenario_of(tmp_path)["ab"]
    assert HEADER in out, out
    assert ab["verdict"] in ("unchanged", "inconclusive"), out
    assert ab["process_pairs"] <= 3
    assert done.returncode == 0, out
