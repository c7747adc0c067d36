"""Who holds an accelerator: npu-smi's tables and NVML's answers, read from recorded output; absent tools for real."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from pytest_diffperf.serving.deviceusage import (
    MIB,
    DeviceProcess,
    NpuSmiProbe,
    NvmlProbe,
    nvml_state,
    parse_npu_smi,
    probe_for,
)

DATA = Path(__file__).parent / "data"


def test_npu_smi_on_a_910b3_host_gives_each_npus_hbm_and_the_process_holding_npu_2():
    states = {s.device: s for s in parse_npu_smi((DATA / "npu-smi-910b3.txt").read_text())}
    assert sorted(states) == [str(i) for i in range(8)]
    assert states["2"].memory_used_mib == 41052 and states["2"].memory_total_mib == 65536  # HBM, not Memory-Usage 0/0
    assert states["2"].processes == (DeviceProcess(1333928, "", 37709.0),)
    assert states["0"].processes == () and states["0"].memory_used_mib == 3408


def test_npu_smi_counts_a_process_on_two_chips_of_an_npu_once_with_its_memory_summed():
    states = {s.device: s for s in parse_npu_smi((DATA / "npu-smi-processes-2chips.txt").read_text())}
    assert sorted(states) == ["0", "1", "2"]
    npu0 = {p.pid: p.memory_mib for p in states["0"].processes}
    assert npu0 == {3325989: 50128, 3330598: 132, 3328327: 133 + 50119, 3333165: 132}
    assert states["2"].processes == () and states["2"].memory_used_mib is None  # no device table in this output


def test_nvml_answers_become_a_state_in_mib_a_process_listed_twice_once():
    # An H100's answer while two processes compute on it, one also drawing; NVML_VALUE_NOT_AVAILABLE for a third.
    state = nvml_state(
        "0",
        used_bytes=54_321 * MIB,
        total_bytes=81_559 * MIB,
        processes=[(4242, 40_000 * MIB), (4242, 512 * MIB), (777, 14_000 * MIB), (9, None)],
        names={4242: "python3"},
    )
    assert state.memory_used_mib == 54_321 and state.memory_total_mib == 81_559
    assert state.processes == (
        DeviceProcess(9, "", None),
        DeviceProcess(777, "", 14_000.0),
        DeviceProcess(4242, "python3", 40_000.0),
    )
    assert state.processes[2].text() == "pid 4242 (python3, 40000 MiB)"
    assert state.processes[0].text() == "pid 9 (unknown)"


def test_nvml_without_its_library_is_no_probe():
    pytest.importorskip("pynvml")  # nvidia-ml-py, in the test extra: its import works, NVML's library is not here
    if Path("/dev/nvidiactl").exists():
        pytest.skip("an NVIDIA driver is present")
    assert NvmlProbe.create() is None
    assert probe_for("cpu") is None and probe_for("h100") is None


def _fake_npu_smi(folder: Path, output: Path) -> Path:
    program = folder / "npu-smi"
    program.write_text(f'#!/bin/sh\n[ "$1" = info ] && cat {output}\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


def test_npu_smi_absent_is_no_probe_and_on_path_is_run(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    if shutil.which("npu-smi"):
        pytest.skip("npu-smi is installed")
    assert probe_for("npu") is None
    _fake_npu_smi(tmp_path, DATA / "npu-smi-910b3.txt")
    probe = probe_for("npu")
    assert isinstance(probe, NpuSmiProbe)
    assert [s.device for s in probe.states(["2", "5"])] == ["2", "5"]
    assert probe.states(["2"])[0].processes[0].pid == 1333928


def test_a_failing_npu_smi_is_nothing_known(tmp_path):
    program = tmp_path / "npu-smi"
    program.write_text("#!/bin/sh\necho 'dcmi module initialize failed' >&2\nexit 255\n")
    program.chmod(0o755)
    assert NpuSmiProbe(str(program)).states(["0"]) == []
    assert NpuSmiProbe(os.fspath(tmp_path / "missing")).states(["0"]) == []
