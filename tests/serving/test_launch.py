"""SGLang's command line from the launcher, ports for concurrent real servers, the access-log exclusion, warmup records."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
import requests

from pytest_diffperf import protocol
from pytest_diffperf.cases import Case
from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.launchers import Launcher, ReferenceLauncher, ServerSpec
from pytest_diffperf.serving import measure as runner
from pytest_diffperf.serving import perflog
from pytest_diffperf.serving.client import RequestError
from pytest_diffperf.serving.process import ServerError, ServerPorts, ServerProcess, server_ports
from tests.support.suite import tiny_case


def spec(serve_args: str = "", model: str = "tiny/flux-t2i") -> ServerSpec:
    return ServerSpec("sglang", model, serve_args, (), 1)


def test_command_keeps_sglangs_flag_order_and_adds_each_flag_once():
    tail = Launcher().command(spec("--tp-size 2"), 30000)[9:]
    assert tail == [
        "--num-gpus",
        "1",
        "--tp-size",
        "2",
        "--strict-ports",
        "--uvicorn-access-log-exclude-prefixes",
        "/health",
    ]
    converted = Launcher().command(spec("--tp-size 2 --strict-ports --x '{\"a\": 1}'"), 30000)
    assert converted[-5:] == ["--strict-ports", "--x", '{"a": 1}', "--uvicorn-access-log-exclude-prefixes", "/health"]
    assert converted.count("--strict-ports") == 1
    own = Launcher().command(spec("--uvicorn-access-log-exclude-prefixes /metrics"), 30000)
    assert own.count("--uvicorn-access-log-exclude-prefixes") == 1
    assert "/health" not in own


def test_server_command_adds_scheduler_and_master_ports_only_to_sglangs_command_line():
    ports = ServerPorts(30000, 30002, 30003)
    assert ReferenceLauncher().server_command(spec(), ports)[-4:] == [
        "--scheduler-port",
        "30002",
        "--master-port",
        "30003",
    ]

    class Other(Launcher):
        name = "other"

        def command(self, spec, port):
            return ["other-serve", "--port", str(port)]

    assert Other().server_command(spec(), ports) == ["other-serve", "--port", "30000"]


def test_sglang_writes_its_outputs_into_the_servers_folder_unless_the_serve_args_say_where(tmp_path):
    assert Launcher().output_args(spec(), tmp_path) == ["--output-path", str(tmp_path / "outputs")]
    assert Launcher().output_args(spec("--output-path /data/out"), tmp_path) == []
    assert Launcher().output_args(spec("--output-path=/data/out"), tmp_path) == []
    assert ReferenceLauncher().output_args(spec(), tmp_path) == []  # it keeps outputs in memory


def test_a_case_model_names_a_folder_through_a_variable(monkeypatch):
    case = Case.model_validate(tiny_case("real", model="${DIFFPERF_MODELS}/tiny-FLUX.1-dev"))
    monkeypatch.setenv("DIFFPERF_MODELS", "/opt/models")
    assert ServerSpec.for_case(case, "sglang").model == "/opt/models/tiny-FLUX.1-dev"
    monkeypatch.delenv("DIFFPERF_MODELS")
    with pytest.raises(DiffperfError) as info:
        ServerSpec.for_case(case, "sglang")
    assert str(info.value).startswith(
        "case real: model: '${DIFFPERF_MODELS}/tiny-FLUX.1-dev' names the environment variable DIFFPERF_MODELS, "
        "which is not set; set it to the folder that holds the model"
    )


def test_the_sglang_beside_the_running_python_is_found_after_paths_own(tmp_path, monkeypatch):
    scripts = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", "/usr/bin")
    assert Launcher().env(spec(), tmp_path)["PATH"] == f"/usr/bin{os.pathsep}{scripts}"
    monkeypatch.setenv("PATH", f"{scripts}{os.pathsep}/usr/bin")
    assert "PATH" not in Launcher().env(spec(), tmp_path)  # already there: the environment is left as it is


def test_server_ports_are_distinct_in_the_range_and_keep_port_plus_one_free():
    for _ in range(20):
        ports = server_ports(ports=range(24000, 24040))
        chosen = [ports.http, ports.http + 1, ports.scheduler, ports.master]
        assert len(set(chosen)) == 4
        assert all(p in range(24000, 24040) for p in chosen)


def test_no_free_port_pair_is_a_clear_error():
    for _ in range(50):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            port = taken.getsockname()[1]
            with socket.socket() as below:
                try:
                    below.bind(("127.0.0.1", port - 1))
                except OSError:
                    continue  # port - 1 is in use (listening, or a connection's local port): try another
            with pytest.raises(ServerError, match=r"no free pair of ports \(port, port \+ 1\)"):
                server_ports(ports=range(port - 1, port + 1))  # port - 1 needs port, which is taken
            return
    pytest.fail("no port with a free port below it")


@pytest.mark.server
def test_reference_server_takes_sglangs_flags_and_leaves_health_out_of_its_access_log(tmp_path):
    launcher = ReferenceLauncher()
    ports = server_ports()
    server = ServerProcess(
        launcher.server_command(spec("--warmup-mode server"), ports),
        launcher.env(spec(), tmp_path),
        tmp_path / "server.log",
        ports.http,
    )
    server.start()
    try:
        server.wait_ready(timeout=300)
        assert requests.get(server.base_url + "/v1/models", timeout=30).status_code == 200
        case = Case(id="w", model="tiny/flux-t2i", task="text-to-image", prompt="p", width=64, height=64,
                    num_inference_steps=2, perf_warmup_requests=1)  # fmt: skip
        waited: list[str] = []
        real = perflog.wait_for_record

        def waiting(*a):
            waited.append(a[1])
            return real(*a)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(perflog, "wait_for_record", waiting)
            samples = runner.measure(server, launcher, case, timeout=120)
        assert len(waited) == 2
        assert waited[1] == samples[0].output.request_id
        with pytest.MonkeyPatch.context() as patch:  # a warmup whose record never appears fails the request
            patch.setattr(runner, "PERF_RECORD_TIMEOUT_S", 0.5)
            patch.setattr(perflog, "wait_for_record", lambda *a: real(a[0], "no-such-id", a[2]))
            with pytest.raises(RequestError, match="the perf record of warmup request 1"):
                runner.measure(server, launcher, case, timeout=120)
    finally:
        server.stop()
    log = (tmp_path / "server.log").read_text()
    assert '"GET /v1/models HTTP/1.1" 200' in log
    assert f"GET {protocol.HEALTH_PATH}" not in log
