"""What is on an accelerator: its memory in use and the processes holding it (NVML, Ascend's ``npu-smi``).

A probe answers :class:`DeviceState` for device ids as the visible-devices variable lists them
(``0``, ``1``; NVML also takes ``GPU-...`` UUIDs). NVML is read through ``pynvml`` (the
``nvidia-ml-py`` package) when it imports and its library loads; ``npu-smi info`` is run and its
tables parsed (an NPU's chips are counted as the NPU). Where neither is present there is no probe
(:func:`probe_for` returns None) and nothing is recorded. The vendor calls are kept thin: what they
return goes through :func:`nvml_state` and :func:`parse_npu_smi`, which are tested on recorded output.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..platforms import Platform

MIB = 1024 * 1024
NPU_SMI_TIMEOUT_S = 20.0
_PAIR = re.compile(r"(\d+)\s*/\s*(\d+)")
_NPU_ROW = re.compile(r"^\|\s*(\d+)\s+\S+\s*\|\s*\w+\s*\|")  # | 0     910B3    | OK    | ...
_CHIP_ROW = re.compile(r"^\|\s*\d+\s*\|\s*[0-9A-Fa-f]{4}:[0-9A-Fa-f:.]+\s*\|(.*)\|")  # | 0  | 0000:C1:00.0 | ...
_PROC_ROW = re.compile(
    r"^\|\s*(\d+)\s+\d+\s*\|\s*(\d+)\s*\|([^|]*)\|\s*(\d+)\s*\|"
)  # | 2  0 | 1333928 | name | 37709 |
_IDLE_ROW = re.compile(r"No running processes found in NPU\s+(\d+)")


@dataclass(frozen=True)
class DeviceProcess:
    """A process holding a device, and the device memory it holds (None: not reported)."""

    pid: int
    name: str
    memory_mib: float | None

    def text(self) -> str:
        memory = f", {self.memory_mib:.0f} MiB" if self.memory_mib is not None else ""
        return f"pid {self.pid} ({self.name or 'unknown'}{memory})"


@dataclass(frozen=True)
class DeviceState:
    """One device: memory in use and in all (MiB; None: not reported) and the processes holding it."""

    device: str
    memory_used_mib: float | None
    memory_total_mib: float | None
    processes: tuple[DeviceProcess, ...] = ()


class DeviceProbe(Protocol):
    name: str

    def states(self, devices: Sequence[str]) -> list[DeviceState]:
        """The state of each of ``devices`` that the tool knows."""
        ...


def nvml_state(
    device: str, used_bytes: int | None, total_bytes: int | None, processes: Iterable[tuple[int, int | None]],
    names: dict[int, str] | None = None,
) -> DeviceState:  # fmt: skip
    """A device's state from what NVML returned: its memory info and (pid, used memory bytes or None) per process.

    NVML reports a process twice when it computes and draws; the larger figure is kept.
    """
    held: dict[int, int | None] = {}
    for pid, used in processes:
        old = held.get(pid)
        held[pid] = used if old is None else max(old, used or 0)
    return DeviceState(
        device,
        None if used_bytes is None else used_bytes / MIB,
        None if total_bytes is None else total_bytes / MIB,
        tuple(
            DeviceProcess(pid, (names or {}).get(pid, ""), None if used is None else used / MIB)
            for pid, used in sorted(held.items())
        ),
    )


class NvmlProbe:
    """NVIDIA devices through NVML (``pynvml``)."""

    name = "nvml"

    def __init__(self, nvml: Any):
        self.nvml = nvml

    @classmethod
    def create(cls) -> NvmlProbe | None:
        """The probe, or None when ``pynvml`` is not installed or NVML's library does not load (no driver)."""
        try:
            import pynvml  # type: ignore[import-not-found,import-untyped,unused-ignore]  # optional: nvidia-ml-py
        except ImportError:
            return None
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError:
            return None
        return cls(pynvml)

    def states(self, devices: Sequence[str]) -> list[DeviceState]:
        nvml, states = self.nvml, []
        for device in devices:
            try:
                handle = (
                    nvml.nvmlDeviceGetHandleByUUID(device)
                    if device.startswith(("GPU-", "MIG-"))
                    else nvml.nvmlDeviceGetHandleByIndex(int(device))
                )
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                procs = [
                    *nvml.nvmlDeviceGetComputeRunningProcesses(handle),
                    *nvml.nvmlDeviceGetGraphicsRunningProcesses(handle),
                ]
            except (nvml.NVMLError, ValueError):
                continue  # a device NVML does not know: nothing to say about it
            states.append(
                nvml_state(device, memory.used, memory.total, [(p.pid, _nvml_bytes(p.usedGpuMemory)) for p in procs])
            )
        return states


def _nvml_bytes(value: int | None) -> int | None:
    """NVML's used memory of a process: None when it is not available (NVML_VALUE_NOT_AVAILABLE, or no permission)."""
    return None if value is None or value >= 2**63 else int(value)


def parse_npu_smi(text: str) -> list[DeviceState]:
    """The devices of ``npu-smi info``'s output: each NPU's HBM use (else its memory use) and the processes on it."""
    memory: dict[str, tuple[float | None, float | None]] = {}
    processes: dict[str, list[DeviceProcess]] = {}
    npu: str | None = None
    for line in text.splitlines():
        if (match := _PROC_ROW.match(line)) is not None:
            proc = DeviceProcess(int(match[2]), match[3].strip(), float(match[4]))
            processes.setdefault(match[1], []).append(proc)
        elif (match := _IDLE_ROW.search(line)) is not None:
            processes.setdefault(match[1], [])
        elif (match := _CHIP_ROW.match(line)) is not None and npu is not None:
            pairs = [(float(u), float(t)) for u, t in _PAIR.findall(match[1])]
            used, total = next(((u, t) for u, t in reversed(pairs) if t > 0), (None, None))
            old_used, old_total = memory.get(npu, (None, None))
            if used is not None and old_used is not None and old_total is not None and total is not None:
                used, total = used + old_used, total + old_total  # another chip of the same NPU
            memory[npu] = (used, total)
        elif (match := _NPU_ROW.match(line)) is not None:
            npu = match[1]
    return [
        DeviceState(device, *memory.get(device, (None, None)), tuple(_merged(processes.get(device, []))))
        for device in sorted({*memory, *processes}, key=int)
    ]


def _merged(procs: Sequence[DeviceProcess]) -> list[DeviceProcess]:
    """One entry per pid (a process on several chips of an NPU: its memory summed)."""
    by_pid: dict[int, DeviceProcess] = {}
    for p in procs:
        old = by_pid.get(p.pid)
        memory = p.memory_mib if old is None else (old.memory_mib or 0) + (p.memory_mib or 0)
        by_pid[p.pid] = DeviceProcess(p.pid, p.name or (old.name if old else ""), memory)
    return list(by_pid.values())


class NpuSmiProbe:
    """Ascend NPUs through ``npu-smi info``."""

    name = "npu-smi"

    def __init__(self, program: str):
        self.program = program

    def states(self, devices: Sequence[str]) -> list[DeviceState]:
        try:
            out = subprocess.run(
                [self.program, "info"], capture_output=True, text=True, timeout=NPU_SMI_TIMEOUT_S, check=False
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            return []
        wanted = set(devices)
        return [s for s in parse_npu_smi(out) if s.device in wanted]


def probe_for(platform: Platform | None) -> DeviceProbe | None:
    """The probe for the run's platform: ``npu-smi`` on Ascend, NVML elsewhere; None when the tool is absent."""
    if platform == "npu":
        program = shutil.which("npu-smi")
        return NpuSmiProbe(program) if program else None
    return NvmlProbe.create()
