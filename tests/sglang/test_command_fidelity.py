"""The server command line and environment the plugin starts equal those of SGLang's own test fixture.

SGLang side: the real ``diffusion_server`` fixture (test_server_common.py) and ``ServerManager.start``
(test_server_utils.py), run until they spawn the process (``Popen`` records and stops there). Plugin
side: ``Launcher.server_command`` and ``Launcher.env`` for the converted case. The plugin adds only
the scheduler and master ports, taken from the worker's range.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_diffperf import protocol
from pytest_diffperf.launchers import Launcher, ServerSpec
from pytest_diffperf.serving.process import ServerPorts

PORT = 31234
PORTS = ServerPorts(PORT, 31240, 31250)


class Spawned(Exception):
    """Raised by the recording Popen: the command was built, nothing is started."""


@pytest.fixture
def sglang_command(harness, monkeypatch, tmp_path):
    """(command, environment added to os.environ) SGLang's fixture spawns for a case."""
    monkeypatch.setenv("SGLANG_TEST_SERVER_PORT", str(PORT))
    monkeypatch.setenv("SGLANG_PERF_LOG_DIR", str(tmp_path / "perf"))
    monkeypatch.delenv("SGLANG_TEST_SERVE_ARGS", raising=False)
    spawned = []

    def popen(command, **kwargs):
        spawned.append((command, kwargs["env"]))
        raise Spawned

    monkeypatch.setattr(harness.utils, "subprocess", SimpleNamespace(Popen=popen, PIPE=-1, STDOUT=-2), raising=True)
    fixture = harness.diffusion_server

    def run(tc) -> tuple[list[str], dict[str, str]]:
        spawned.clear()
        with pytest.raises(Spawned):
            next(fixture(tc))
        command, env = spawned[0]
        added = {k: v for k, v in env.items() if os.environ.get(k) != v}
        return command, added

    return run


def test_every_converted_h100_case_starts_the_command_and_env_sglang_starts(h100_file, sglang_cases, sglang_command):
    launcher = Launcher()
    flags: set[str] = set()
    for case in h100_file.cases:
        command, env = sglang_command(sglang_cases[case.id])
        spec = ServerSpec.for_case(case, "sglang")
        ours = launcher.server_command(spec, PORTS)
        assert ours[-4:] == ["--scheduler-port", "31240", "--master-port", "31250"], case.id
        assert ours[:-4] == command, case.id
        ours_env = launcher.env(spec, perf_dir=Path("perf").absolute())
        assert {**ours_env, protocol.PERF_LOG_DIR_ENV: "-"} == {**env, protocol.PERF_LOG_DIR_ENV: "-"}, case.id
        flags.update(arg for arg in command if arg.startswith("--"))
    # the comparison covered the fixture's every kind of flag
    assert {
        "--tp-size",
        "--ulysses-degree",
        "--ring-degree",
        "--enable-cfg-parallel",
        "--dit-layerwise-offload",
        "--text-encoder-cpu-offload",
        "--lora-path",
        "--warmup-sampling-params",
        "--strict-ports",
        "--uvicorn-access-log-exclude-prefixes",
    } <= flags


def test_cache_dit_and_env_vars_reach_the_server_environment(h100_file, sglang_cases, sglang_command):
    cases = {c.id: c for c in h100_file.cases}
    _, env = sglang_command(sglang_cases["wan2_1_t2v_1_3b_cache_dit_sp_only_2gpu"])
    assert env["SGLANG_CACHE_DIT_ENABLED"] == "true"
    assert env["SGLANG_CACHE_DIT_WARMUP"] == "2"
    spec = ServerSpec.for_case(cases["wan2_1_t2v_1_3b_cache_dit_sp_only_2gpu"], "sglang")
    assert {"SGLANG_CACHE_DIT_ENABLED": "true", "SGLANG_CACHE_DIT_WARMUP": "2"}.items() <= Launcher().env(
        spec, perf_dir=Path("/p")
    ).items()


def test_the_warmup_quality_pin_is_one_argument_the_server_parses_as_json(h100_file):
    cases = {c.id: c for c in h100_file.cases}
    command = Launcher().command(ServerSpec.for_case(cases["qwen_image_t2i_2_gpus_extra_high"], "sglang"), PORT)
    value = command[command.index("--warmup-sampling-params") + 1]
    assert value == '{"quality": "lossless"}'  # "extra-high" normalized, as SGLang's __post_init__ does
    assert cases["qwen_image_t2i_2_gpus_extra_high"].sglang_request_extra["quality"] == "extra-high"
