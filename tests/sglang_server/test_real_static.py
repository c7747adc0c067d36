"""The bundled real-server cases judged against SGLang's own ``sglang serve`` on this CPU, as a user runs them.

Three runs, each a real pytest process with real SGLang servers: a regeneration (baselines and ground truth, no
``--regen-force``), a judging run against what it wrote (no change; the baseline given memory figures the CPU
server does not report; the first server given a port another process holds), and a server that aborts its
warmup. Each test reads one of them.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_diffperf._util.ports import ephemeral_ports
from tests.support.sglang_server import (
    BASELINES,
    MODELS_ENV,
    SCENARIO,
    bundled_args,
    case_file,
    models_dir,
    ports_of,
    requires_sglang,
    run_pytest,
)

pytestmark = [pytest.mark.server, pytest.mark.sglang_server, requires_sglang]

CLIP = ("--diffperf-clip-model=diffperf-tiny", "--diffperf-clip-pretrained=none")
MEMORY = {"load_peak_host_anon_mb": 2000.0, "runtime_peak_host_anon_mb": 2000.0}
# The first server of the judging run gets an HTTP port another process listens on (a local plugin of that run):
# SGLang refuses it under --strict-ports, and the plugin starts it again on other ports.
PORT_RACE = """
import socket

from pytest_diffperf.serving import pool

HELD = socket.socket()
HELD.bind(("127.0.0.1", 0))
HELD.listen()
_real, _calls = pool.server_ports, []


def _racing(host="127.0.0.1", ports=None, replicas=1):
    got = _real(host, ports, replicas)
    _calls.append(got)
    return pool.ServerPorts(HELD.getsockname()[1], got.scheduler, got.master, got.replicas) if len(_calls) == 1 else got


pool.server_ports = _racing
"""


@dataclass
class Run:
    cwd: Path
    out: str
    returncode: int

    @property
    def results(self) -> dict:
        return json.loads((self.cwd / "results.json").read_text())

    @property
    def scenario(self) -> dict:
        (scenario,) = self.results["scenarios"]
        return scenario


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return models_dir(tmp_path_factory)


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory, models) -> Run:
    """Baselines and ground truth regenerated into a copy of the bundled baseline file, paths relative."""
    cwd = tmp_path_factory.mktemp("regen")
    shutil.copy(BASELINES, cwd / "baselines.json")
    args = bundled_args(Path("baselines.json"), "--regen-baselines", "--regen-ground-truth", "--diffperf-gt-dir=gt")
    args.append("--accept-busy")  # the machine is shared: a baseline measured busy is recorded, named in metadata
    args.append("--diffperf-log-dir=logs")
    done = run_pytest(cwd, *args, *CLIP, "--diffperf-json=results.json", env={MODELS_ENV: str(models)})
    return Run(cwd, done.stdout + done.stderr, done.returncode)


@pytest.fixture(scope="module")
def judged(tmp_path_factory, models, regenerated) -> Run:
    """The regenerated baseline (with host-memory figures added) and ground truth judged: nothing changed."""
    cwd = tmp_path_factory.mktemp("judge")
    doc = json.loads((regenerated.cwd / "baselines.json").read_text())
    doc["scenarios"][SCENARIO].update(MEMORY)
    (cwd / "baselines.json").write_text(json.dumps(doc, indent=4))
    shutil.copytree(regenerated.cwd / "gt", cwd / "gt")
    (cwd / "conftest.py").write_text(PORT_RACE)
    args = bundled_args(cwd / "baselines.json", "--diffperf-gt-dir=gt", "--diffperf-json=results.json", *CLIP)
    done = run_pytest(cwd, *args, env={MODELS_ENV: str(models)})
    return Run(cwd, done.stdout + done.stderr, done.returncode)


def test_the_bundled_real_server_case_is_collected_without_a_server(tmp_path, models):
    done = run_pytest(tmp_path, *bundled_args(BASELINES), "--collect-only", "-q", env={MODELS_ENV: str(models)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"::{SCENARIO}" in done.stdout
    assert "1 test collected" in done.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["tmp"] and not list((tmp_path / "tmp").iterdir())  # nothing


def test_regeneration_on_a_machine_without_an_accelerator_needs_no_force(regenerated):
    assert regenerated.returncode == 0, regenerated.out
    assert "refusing" not in regenerated.out
    assert regenerated.results["provenance"]["measured_platform"] == "cpu"
    assert "sglang 0.5" in regenerated.out and "(cpu)" in regenerated.out  # the header names the platform
    doc = json.loads((regenerated.cwd / "baselines.json").read_text())
    entry = doc["scenarios"][SCENARIO]
    assert entry["expected_e2e_ms"] > 0 and "DenoisingStage" in entry["stages_ms"]
    assert "measured on" in doc["metadata"]["regenerated_by"] and "(cpu)" in doc["metadata"]["regenerated_by"]
    assert (regenerated.cwd / "gt" / f"{SCENARIO}_1gpu.png").is_file()


def test_sglang_writes_its_outputs_under_the_servers_log_folder(regenerated):
    assert not (regenerated.cwd / "outputs").exists()  # SGLang's default, ./outputs/, is not used
    (server,) = regenerated.results["servers"]
    assert "--output-path" in server["command"]
    assert Path(server["log"]).is_relative_to(regenerated.cwd / "logs")
    written = list((Path(server["log"]).parent / "outputs").glob("*.png"))
    assert len(written) >= 3  # the measured requests (the warmup request's too)


def test_server_ports_are_outside_the_kernels_ephemeral_range(regenerated, judged):
    ephemeral = ephemeral_ports()
    started = [s for s in regenerated.results["servers"] + judged.results["servers"] if s["ready"]]
    assert started
    for server in started:
        assert not set(ports_of(server["command"])) & set(ephemeral), server["command"]


def test_no_change_never_fails(judged):
    assert judged.scenario["verdict"] in ("pass", "inconclusive"), judged.out
    assert judged.scenario["outcome"] != "fail", judged.out
    assert judged.returncode == 0, judged.out


def test_the_ground_truth_regenerated_from_the_real_server_matches_bit_exact(judged):
    consistency = judged.scenario["consistency"]
    assert consistency["status"] == "pass", consistency
    assert consistency["worst"]["psnr"] == "inf" and consistency["worst"]["mad"] == 0.0, consistency


def test_memory_the_server_does_not_report_is_named_never_skipped_silently(judged):
    assert judged.scenario["unreported"] == sorted(MEMORY)
    assert not [c for c in judged.scenario["checks"] if c["name"] in MEMORY]
    line = "not reported by the server: 2 memory check(s) not made in 1 scenario(s)"
    assert line in judged.out, judged.out


def test_every_started_server_is_listed_the_one_that_lost_its_port_too(judged):
    servers = judged.results["servers"]
    first, *later = servers
    assert not first["ready"] and "--strict-ports" in (first["error"] or ""), first
    assert later and later[-1]["ready"], servers
    assert len({s["pid"] for s in servers}) == len(servers)
    assert judged.scenario["server"]["pid"] == later[-1]["pid"]
    assert "its port was taken; trying other ports" in judged.out


def test_a_server_that_aborts_its_warmup_is_reported_with_its_reason(tmp_path, models):
    """SGLang 0.5.23 on CPU cannot warm up a bf16 DiT beside fp32 text encoders; it says why and SIGTERMs itself."""
    args = "--warmup-mode server --warmup-resolutions 256x256 --dit-precision bf16 --vae-precision fp32"
    cases = case_file(tmp_path / "cases.json", serve_args=args + " --text-encoder-precisions fp32 fp32")
    done = run_pytest(
        tmp_path,
        *bundled_args(BASELINES, "--diffperf-json=results.json", cases=cases),
        env={MODELS_ENV: str(models)},
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    (scenario,) = json.loads((tmp_path / "results.json").read_text())["scenarios"]
    message = scenario["message"]
    assert scenario["verdict"] == "error", message
    assert "while starting: Server warmup failed; aborting startup: " in message, message
    assert "mat1 and mat2 must have the same dtype" in message, message
    assert f"::{SCENARIO} - server http://127.0.0.1:" in out and "killed by signal SIGTERM" in out
