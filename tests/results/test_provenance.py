"""The header's line about a baseline measured on another machine, the CI run's page, the measured platform."""

from __future__ import annotations

import pytest

from pytest_diffperf._util.device import cpu_name
from pytest_diffperf.results import provenance
from pytest_diffperf.results.provenance import Provenance, ci_run, machine_note

HERE = Provenance(timestamp="2026-12-02T10:00:00+00:00", device="AMD EPYC", measured_platform="cpu")


def test_another_device_or_runner_is_named_this_machine_is_not():
    note = machine_note({"measured_device": "Intel Xeon"}, "cpu.json", HERE, "cpu")
    assert note is not None and note.startswith(
        "cpu.json was measured on Intel Xeon, this run measures on AMD EPYC: timings of another machine; for "
        "decisive verdicts record this one once (pytest --regen-baselines --diffperf-baselines=FILE, or diffperf "
        "accept of a run's --diffperf-json), then judge against it"
    )
    assert machine_note({"measured_device": "AMD EPYC"}, "cpu.json", HERE, "cpu") is None
    gpu = Provenance(timestamp="t", device="NVIDIA H100 80GB HBM3", measured_platform="h100", runner="h100-b")
    recorded = {"measured_device": "NVIDIA H100 80GB HBM3", "measured_runner": "h100-a"}
    assert "measured on NVIDIA H100 80GB HBM3, runner h100-a, this run measures on NVIDIA H100 80GB HBM3, " \
        "runner h100-b:" in str(machine_note(recorded, "h100.json", gpu, "h100"))  # fmt: skip
    assert machine_note({**recorded, "measured_runner": "h100-b"}, "h100.json", gpu, "h100") is None


def test_a_file_that_names_no_machine_is_noted_on_cpu_only():
    note = machine_note({"hardware": "CPU, 2 cores"}, "data/perf_baselines/cpu.json", HERE, "cpu")
    assert str(note).startswith("data/perf_baselines/cpu.json was measured on a machine it does not name")
    gpu = Provenance(timestamp="t", device="NVIDIA H100 80GB HBM3", measured_platform="h100")
    assert machine_note({}, "h100.json", gpu, "h100") is None  # SGLang's files name none: a fleet's figures
    assert machine_note(None, "x.json", HERE, None) is not None


def test_the_ci_run_page_needs_all_three_variables():
    env = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "42"}
    assert ci_run(env) == "https://github.com/o/r/actions/runs/42"
    assert ci_run({**env, "GITHUB_RUN_ID": ""}) is None


@pytest.mark.parametrize("launcher", ["sglang", "reference", "vllm-omni", None])
def test_a_machine_without_an_accelerator_measures_on_cpu_whatever_the_launcher(monkeypatch, launcher):
    """SGLang on a machine with no accelerator runs on its CpuPlatform: the figures are cpu figures."""
    monkeypatch.setattr(provenance, "accelerator_name", lambda: None)
    assert provenance.measured_on(launcher) == (cpu_name(), "cpu")


def test_an_accelerator_decides_the_platform_except_for_cpu_only_launchers(monkeypatch):
    monkeypatch.setattr(provenance, "accelerator_name", lambda: "NVIDIA H100 80GB HBM3")
    assert provenance.measured_on("sglang") == ("NVIDIA H100 80GB HBM3", "h100")
    assert provenance.measured_on("reference") == (cpu_name(), "cpu")
