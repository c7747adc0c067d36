"""`diffperf calibrate`: a runner class's noise file from a recorded A/A run and a history of static runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pytest_diffperf.results import history
from pytest_diffperf.results.model import RESULTS_VERSION, ScenarioResult
from pytest_diffperf.verdicts.calibration import Run, round_up, static_estimate
from pytest_diffperf.verdicts.priors import read_priors
from tests.support import resultfiles
from tests.support.cli import diffperf
from tests.support.paths import DATA

# A recorded A/A run: the reference server's flux_tiny_t2i, 4 process pairs of 4 request pairs, on the 2-vCPU VM at a
# load average of 11-16 (others took 76-79 % of the CPUs; recorded with --diffperf-busy-share=off so that it counts):
#   pytest --diffperf=pr_test --diffperf-base=current --diffperf-ab-prestart=0 --diffperf-ab-request-pairs=4
#     --diffperf-ab-min-process-pairs=4 --diffperf-ab-max-process-pairs=4 --diffperf-ab-max-requests=32
#     --diffperf-ab-tolerance=0.1% --diffperf-busy-share=off --diffperf-json=aa.json -k "flux_tiny_t2i and not 8steps"
AA = DATA / "results" / "aa_flux_tiny_cpu.json"
DAY_DRIFT, PROCESS, WITHIN = 0.06, 0.03, 0.08  # the synthetic history's noise (log units)


def run_document(day: int, hour: int, rows: list[dict], *, busy: bool = False, timestamp: bool = True) -> dict:
    interference = {"threshold": 0.25, "effect": "kept", "windows": [{
        "wall_s": 10.0, "cpus": 2, "outside_cpu_s": 15.0, "cpu_share": 0.75, "device_share": 0.0,
        "load_avg": [4.0, 4.0, 4.0], "busy": True}]} if busy else None  # fmt: skip
    scenario = ScenarioResult(scenario="steady", verdict="pass", interference=interference).document()
    del scenario["rows"]  # a results file keeps its rows at the top level
    provenance = {
        "commit": f"{day:02d}{hour:02d}" + "a" * 36,
        "timestamp": f"2026-05-{day + 1:02d}T{hour:02d}:00:00+00:00",
    }
    doc = {"version": RESULTS_VERSION, "provenance": provenance, "rows": rows, "scenarios": [scenario], "servers": []}
    return doc if timestamp else {k: v for k, v in doc.items() if k != "provenance"}


def rows_of(rng: np.random.Generator, level: float, requests: int = 6) -> list[dict]:
    out = []
    for i in range(requests):
        e2e = 1000 * level * math.exp(WITHIN * rng.standard_normal())
        out.append({"scenario": "steady", "request": i, "e2e_ms": e2e, "load_ms": 8000 * level,
                    "stages_ms": {"DenoisingStage": 0.7 * e2e, "DecodingStage": 0.3 * e2e, "InputValidationStage": 0.01}})  # fmt: skip
    return out


def write_history(folder: Path, days: int = 20, seed: int = 3) -> Path:
    """``days`` days of static runs: two fresh servers a day on even days, one on odd days."""
    rng = np.random.default_rng(seed)
    for day in range(days):
        drift = DAY_DRIFT * rng.standard_normal()
        for hour in range(2 if day % 2 == 0 else 1):
            level = math.exp(drift + PROCESS * rng.standard_normal())
            history.save(folder, run_document(day, 8 + hour, rows_of(rng, level)))
    return folder


def test_a_twenty_day_history_gives_static_priors_with_the_days_drift(tmp_path):
    folder = write_history(tmp_path / "hist")
    out = tmp_path / "noise.json"
    done = diffperf("calibrate", "--history", str(folder), "--runner-class", "vm-2cpu", "-o", str(out))
    assert done.returncode == 0, done.stderr
    priors = read_priors(out)  # the reader accepts what calibrate writes
    e2e = priors.static.e2e
    assert e2e is not None and priors.static.denoise is not None and priors.static.stage is not None
    assert 0.06 <= e2e.within <= 0.11  # 0.08 drawn
    assert e2e.baseline >= e2e.process and 0.04 <= e2e.baseline <= 0.12  # the day drift (0.06) and the process (0.03)
    assert priors.static.load is not None and priors.static.load.within == 0
    cal = priors.calibration
    assert cal is not None and cal.runner_class == "vm-2cpu" and cal.static is not None
    assert (cal.static.days, cal.static.runs, cal.static.scenarios) == (20, 30, ["steady"])
    assert (cal.static.first, cal.static.last) == ("2026-05-01", "2026-05-20")
    assert cal.figures["static.e2e.within"].scenario == "steady"
    assert round_up(cal.figures["static.e2e.within"].measured) == e2e.within
    assert "static.stage.within" in cal.figures and "InputValidationStage" not in out.read_text()
    assert "runner class vm-2cpu" in done.stdout and "30 runs over 20 days (2026-05-01 to 2026-05-20)" in done.stdout
    assert f"  static.e2e.within{' ' * 12}{e2e.within:g}" in done.stdout
    assert f"wrote {out}; judge with it: pytest ... --diffperf-noise {out}" in done.stdout


def test_a_recorded_a_a_run_gives_the_ab_priors(tmp_path):
    out = tmp_path / "noise.json"
    done = diffperf("calibrate", "--ab", str(AA), "-o", str(out))
    assert done.returncode == 0, done.stderr
    recorded = json.loads(AA.read_text())
    measured = {
        (m["name"], field): m[field]
        for s in recorded["scenarios"]
        for m in s["ab"]["metrics"]
        for field in ("between", "within")
        if m[field] is not None
    }
    priors = read_priors(out)
    assert priors.ab.e2e is not None and priors.ab.denoising_stage is not None
    assert priors.ab.e2e.within == round_up(measured[("e2e", "within")])
    assert priors.ab.e2e.between == round_up(measured[("e2e", "between")])
    assert priors.ab.denoising_stage.within == round_up(measured[("stage[DenoisingStage]", "within")])
    cal = priors.calibration
    assert cal is not None and cal.ab is not None and cal.runner_class == recorded["provenance"]["device"]
    assert cal.ab.process_pairs == min(s["ab"]["process_pairs"] for s in recorded["scenarios"])
    assert cal.hardware == "cpu" and cal.static is None and priors.static.e2e is None
    assert f"ab from {AA}: 1 scenario(s), at least {cal.ab.process_pairs} process pairs each" in done.stdout
    # what the machine was doing meanwhile: the A/A run's own interference line, kept with the file's name
    line = f"{AA.name}: {recorded['provenance']['interference']}"
    assert cal.ab.interference == [line] and f"    measured beside: {line}" in done.stdout
    assert cal.note is None


def test_how_the_runs_were_made_is_stored_as_given(tmp_path):
    out = tmp_path / "noise.json"
    note = "pytest --diffperf-base=current --diffperf-ab-min-process-pairs 4 ...; load average 5-8"
    done = diffperf("calibrate", "--ab", str(AA), "-o", str(out), "--note", note)
    assert done.returncode == 0, done.stderr
    cal = read_priors(out).calibration
    assert cal is not None and cal.note == note
    assert f"  made: {note}" in done.stdout


def test_both_at_once(tmp_path):
    out = tmp_path / "noise.json"
    folder = write_history(tmp_path / "hist", days=4)
    done = diffperf("calibrate", "--ab", str(AA), "--history", str(folder), "-o", str(out), "--runner-class", "x")
    assert done.returncode == 0, done.stderr
    priors = read_priors(out)
    assert priors.ab.e2e is not None and priors.static.e2e is not None
    assert priors.describe(out) == f"{out} (runner class x, calibrated {priors.calibration.created[:10]})"  # type: ignore[union-attr]


def test_relative_paths_from_another_folder_and_a_folder_of_shards(tmp_path):
    (tmp_path / "ci" / "aa").mkdir(parents=True)
    (tmp_path / "ci" / "aa" / "shard-1.json").write_bytes(AA.read_bytes())
    write_history(tmp_path / "ci" / "hist", days=3)
    (tmp_path / "elsewhere").mkdir()
    done = diffperf("calibrate", "--ab=../ci/aa", "--history", "../ci/hist", "-o", "../ci/noise.json",
                    cwd=tmp_path / "elsewhere")  # fmt: skip
    assert done.returncode == 0, done.stderr
    priors = read_priors(tmp_path / "ci" / "noise.json")
    assert priors.calibration is not None and priors.calibration.ab is not None
    assert priors.calibration.ab.results == ["../ci/aa/shard-1.json"] and priors.calibration.static is not None
    assert not list((tmp_path / "elsewhere").iterdir())


def test_busy_runs_are_left_out_unless_kept(tmp_path):
    folder = write_history(tmp_path / "hist", days=4)
    rng = np.random.default_rng(1)
    for day in range(4):
        history.save(folder, run_document(day, 20, rows_of(rng, 3.0), busy=True))  # 3x slower: the other jobs'
    quiet = diffperf("calibrate", "--history", str(folder), "-o", str(tmp_path / "quiet.json"), "--runner-class", "x")
    assert quiet.returncode == 0, quiet.stderr
    assert "left out, measured while the machine was busy: steady (" in quiet.stdout
    kept = diffperf("calibrate", "--history", str(folder), "-o", str(tmp_path / "kept.json"), "--runner-class", "x",
                    "--include-busy")  # fmt: skip
    assert kept.returncode == 0, kept.stderr
    calm, noisy = read_priors(tmp_path / "quiet.json"), read_priors(tmp_path / "kept.json")
    assert calm.static.e2e is not None and noisy.static.e2e is not None
    assert noisy.static.e2e.baseline > 2 * calm.static.e2e.baseline
    assert noisy.calibration is not None and len(noisy.calibration.busy) == 4


def test_the_static_estimate_recovers_known_noise():
    rng = np.random.default_rng(11)
    runs = []
    for day in range(200):
        drift = DAY_DRIFT * rng.standard_normal()
        for _ in range(2):
            level = drift + PROCESS * rng.standard_normal()
            runs.append(Run(f"d{day}", tuple(np.exp(level + WITHIN * rng.standard_normal(8)))))
    est = static_estimate(runs)
    assert est.within == pytest.approx(WITHIN, rel=0.2)  # the MAD of 8 around their median runs low, as for A/B
    assert est.process == pytest.approx(PROCESS, abs=0.012)
    assert est.baseline == pytest.approx(math.hypot(DAY_DRIFT, PROCESS), rel=0.15)
    assert (est.runs, est.days, est.same_day_pairs) == (400, 200, 200)


def ab_document(*, candidate: str = "current", pairs: int = 4) -> dict:
    doc = json.loads(AA.read_text())
    doc["candidate"] = candidate
    for s in doc["scenarios"]:
        s["ab"]["process_pairs"] = pairs
    return doc


MISTAKES = [
    (
        [],
        "diffperf calibrate: error: nothing to calibrate from; give an A/A run's results (--ab) and/or a history (--history)",
    ),
    (
        ["--ab", "{ab}"],
        "{ab}: candidate: an A/B run of two builds (base 'current', candidate 'args=--x'), not an A/A run",
    ),
    (["--ab", "{static}"], "{static}: base: not an A/B run (no base build); run A/A with --diffperf-base=current"),
    (["--ab", "{one_pair}"], "no scenario measured A/A on 2 or more process pairs on a quiet machine"),
    (["--ab", "{missing}"], "{missing}: file not found"),
    (["--ab", "{not_json}"], "{not_json}: invalid JSON"),
    (["--history", "{one_day}"], "the history's runs are all from 2026-05-01: a baseline's drift across days needs"),
    (["--history", "{few}"], "{few}: no scenario has 3 or more static runs measured quiet in this history (2 day(s))"),
    (["--history", "{undated}"], "provenance.timestamp: no provenance timestamp: calibration needs each run's day"),
    (["--history", "{missing}"], "{missing}: folder not found"),
    (["--history", "{hist}"], "--runner-class: the runs name no device; name the runner class"),
    (["--history", "{hist}", "--runner-class", " "], "--runner-class: expected a runner class name, got an empty one"),
    (["--ab", "{aa}", "--note", " "], "--note: expected how the runs were made, got an empty note"),
    (["--history", "{hist}", "-o", "{hist}"], "--output: {hist} is a folder; expected a file path"),
    (["--ab", "{aa}", "-o", "{aa}"], "--output: "),
]


@pytest.mark.parametrize(("args", "message"), MISTAKES)
def test_every_mistake_is_one_line_naming_it_and_writes_nothing(tmp_path, args, message):
    paths = {name: tmp_path / name for name in ("ab", "static", "one_pair", "missing", "not_json", "one_day", "few",
                                                 "undated", "hist", "aa")}  # fmt: skip
    for name, doc in (("ab", ab_document(candidate="args=--x")), ("one_pair", ab_document(pairs=1)),
                      ("static", resultfiles.current()),
                      ("aa", ab_document())):  # fmt: skip
        paths[name].write_text(json.dumps(doc))
    paths["not_json"].write_text("{nope")
    rng = np.random.default_rng(5)
    for hour in range(4):
        history.save(paths["one_day"], run_document(0, hour, rows_of(rng, 1.0)))
    for day in range(2):
        history.save(paths["few"], run_document(day, 8, rows_of(rng, 1.0)))
    history.save(paths["undated"], run_document(0, 8, rows_of(rng, 1.0), timestamp=False))
    write_history(paths["hist"], days=3)
    given = [a.format(**paths) for a in args]
    out = tmp_path / "noise.json"
    before = sorted(p.name for p in tmp_path.rglob("*"))
    done = diffperf("calibrate", *given, *([] if "-o" in given else ["-o", str(out)]))
    assert done.returncode == 2, done.stdout
    assert message.format(**paths) in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == before and not out.exists()


def test_priors_are_rounded_up_to_half_a_percent_and_written_as_such():
    assert [round_up(v) for v in (0.0, 0.2016, 0.3469, 0.4, 0.0702, 1.7)] == [0.0, 0.205, 0.35, 0.4, 0.075, 1.0]
    assert json.dumps(round_up(0.2016)) == "0.205"  # not 0.20500000000000002 in the file
