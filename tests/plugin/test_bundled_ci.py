"""The bundled suite split as CI splits it: xdist workers with device slices, and shards merged.

Tolerances are widened through SGLang's environment overrides, outputs are not compared, each
scenario measures one request after its warmup (the bundled cases' own three are for timing), and
nothing is re-measured on fresh servers: these tests compare where and how scenarios ran, not how
fast or what they made (the machine is shared and two servers share two cores). A scenario passes,
or is inconclusive where the noise cannot support a pass (the load time, which no environment
override widens).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_diffperf.cli import main
from pytest_diffperf.sharding.devices import WORKER_PORTS
from tests.support.bundled import cases_file
from tests.support.cli import diffperf
from tests.support.paths import REPO
from tests.support.suite import SKIP_OUTPUTS

pytestmark = pytest.mark.server  # starts server processes

WIDE = dict.fromkeys(
    (
        "SGLANG_E2E_TOLERANCE",
        "SGLANG_STAGE_TIME_TOLERANCE",
        "SGLANG_NON_DENOISE_STAGE_TIME_TOLERANCE",
        "SGLANG_DENOISE_STEP_TOLERANCE",
        "SGLANG_DENOISE_AGG_TOLERANCE",
    ),
    "100",
)
GROUPS = {
    "flux_tiny_t2i": "flux",
    "flux_tiny_t2i_8steps": "flux",
    "sd_tiny_t2i": "sd",
    "sd_tiny_t2i_192": "sd",
    "wan_tiny_t2v": "wan",
    "flux_kontext_tiny_edit": "kontext",
    "wan_tiny_i2v": "wan-i2v",
}


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    """The bundled cases, one measured request each: the same scenarios, groups and server commands."""
    return cases_file(tmp_path_factory.mktemp("cases") / "cases.json", lambda case: case.update(perf_repeat_requests=1))


def bundled(json_path: Path, cases: Path, *flags: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """``pytest --diffperf=pr_test`` at the repository root, as a user types it, on ``cases``."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--diffperf=pr_test",
        f"--diffperf-cases={cases}",
        "--diffperf-remeasure=1",
        f"--diffperf-json={json_path}",
        "-p",
        "no:cacheprovider",
        "-v",
        *flags,
    ]
    environ = {**os.environ, **WIDE, **SKIP_OUTPUTS, **(env or {})}  # where, not what: test_bundled_suite compares
    return subprocess.Popen(command, cwd=REPO, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen) -> str:
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    return out


def verdicts(doc: dict) -> list[tuple[str, str]]:
    return sorted((s["scenario"], s["verdict"]) for s in doc["scenarios"])


@pytest.fixture(scope="module")
def xdist_run(tmp_path_factory, cases) -> tuple[dict, str]:
    """The bundled suite unsharded, on 2 xdist workers, with 4 fake visible devices."""
    path = tmp_path_factory.mktemp("xdist") / "results.json"
    out = finish(bundled(path, cases, "-n", "2", env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"}))
    return json.loads(path.read_text()), out


def test_xdist_workers_keep_groups_and_get_disjoint_devices_and_ports(xdist_run):
    doc, out = xdist_run
    ran = r"\[(gw\d)\] \[ *\d+%\] (?:PASSED|INCONCLUSIVE) \S+::(\w+)"
    workers = {m[2]: m[1] for m in re.finditer(ran, out)}
    assert sorted(workers) == sorted(GROUPS), out  # every scenario passed or was inconclusive
    assert "scheduling tests via ServerGroupScheduling" in out
    by_group: dict[str, set] = {}
    for s in doc["scenarios"]:
        by_group.setdefault(GROUPS[s["scenario"]], set()).add(
            (workers[s["scenario"]], s["server"]["pid"], s["server"]["port"])
        )
    assert all(len(runs) == 1 for runs in by_group.values()), by_group  # one worker, one server per group
    half = WORKER_PORTS.start + len(WORKER_PORTS) // 2
    slices = {"gw0": ("0", range(WORKER_PORTS.start, half)), "gw1": ("2", range(half, WORKER_PORTS.stop))}
    for s in doc["scenarios"]:  # the first device of its worker's slice (0,1 | 2,3), a port of its worker's range
        device, ports = slices[workers[s["scenario"]]]
        assert s["server"]["devices"] == {"CUDA_VISIBLE_DEVICES": device} and s["server"]["port"] in ports, s
    # every server started is listed: one per group, and a fresh one per re-measure
    remeasured = sum(s["noise"]["attempts"] - 1 for s in doc["scenarios"] if s["noise"])
    assert len({s["port"] for s in doc["servers"]}) == len(doc["servers"]) == len(set(GROUPS.values())) + remeasured
    assert set(workers.values()) == {"gw0", "gw1"}


def test_two_shards_merged_equal_one_unsharded_run(xdist_run, cases, tmp_path, capsys):
    shards = [bundled(tmp_path / f"results-{k}.json", cases, f"--diffperf-shard={k}/2") for k in (1, 2)]  # two CI jobs
    outputs = [finish(proc) for proc in shards]
    assert "diffperf: shard 1/2: 3 scenario(s), 2 server start(s)" in outputs[0]
    assert "diffperf: shard 2/2: 4 scenario(s), 3 server start(s)" in outputs[1]
    files = [str(tmp_path / f"results-{k}.json") for k in (1, 2)]
    plan = ["plan", "data/perf_baselines/cpu.json", "--shards", "2", "--cases", str(cases), "--hardware", "cpu"]
    planned = diffperf(*plan, "--server", "reference", cwd=REPO)
    assert planned.returncode == 0, planned.stderr
    matrix = json.loads(planned.stdout)
    for entry, path in zip(matrix["include"], files, strict=True):  # the jobs ran what the plan says
        assert [s["scenario"] for s in json.loads(Path(path).read_text())["scenarios"]] == entry["scenarios"]
    merged_path = tmp_path / "merged.json"
    assert (
        main(["merge", *files, "-o", str(merged_path), "--expect-all", str(REPO / "data/perf_baselines/cpu.json")]) == 0
    )
    summary = capsys.readouterr().out.splitlines()[0]
    assert re.fullmatch(
        r"diffperf merge: 2 file\(s\), 7 scenarios: \d (pass|inconclusive)(, \d inconclusive)?", summary
    )
    assert sum(int(n) for n in re.findall(r"(\d) (?:pass|inconclusive)", summary)) == 7
    merged, unsharded = json.loads(merged_path.read_text()), xdist_run[0]
    assert [sid for sid, _ in verdicts(merged)] == [sid for sid, _ in verdicts(unsharded)]
    assert {v for _, v in verdicts(merged) + verdicts(unsharded)} <= {"pass", "inconclusive"}
    # every scenario measured in both; the row counts differ where noise asked a scenario for another server
    assert {r["scenario"] for r in merged["rows"]} == {r["scenario"] for r in unsharded["rows"]}
    remeasured = sum(s["noise"]["attempts"] - 1 for s in merged["scenarios"] if s["noise"])
    assert len(merged["servers"]) == len(set(GROUPS.values())) + remeasured
