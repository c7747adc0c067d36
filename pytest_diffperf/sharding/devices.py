"""What one pytest process may use: a slice of the visible devices and, under xdist, its own ports.

The device list is ``--diffperf-devices``, else the platform's visible-devices variable
(``CUDA_VISIBLE_DEVICES``; ``ASCEND_RT_VISIBLE_DEVICES`` on NPU, ...); when neither is set,
devices are not managed. Worker ``gwI`` of ``W`` gets the I-th of W equal contiguous slices and
the I-th of W disjoint port ranges; a server gets the first ``num_gpus`` devices of its slice (an A/B
process pair started ahead of the one measuring: the next ``num_gpus``, where the slice holds them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from .._util.ports import server_port_range
from .._util.values import BadValue
from ..errors import DiffperfError

WORKER_PORTS = server_port_range()  # outside the kernel's ephemeral range, split among xdist workers


def visible_devices(
    option: tuple[str, ...] | None, var: str, environ: Mapping[str, str] = os.environ
) -> tuple[str, ...] | None:
    """``--diffperf-devices``, else ``$var`` split on commas; None when neither is set (or empty)."""
    if option is not None:
        return option
    return tuple(d.strip() for d in environ.get(var, "").split(",") if d.strip()) or None


def device_list(text: str) -> tuple[str, ...]:
    """``--diffperf-devices``: ids separated by commas, none empty (``0,,1``), none twice."""
    if not text.strip():
        raise BadValue("expected device ids separated by commas (e.g. 0,1,2,3), got nothing")
    devices = tuple(d.strip() for d in text.split(","))
    if not all(devices):
        raise BadValue(f"expected device ids separated by commas (e.g. 0,1,2,3), got {text!r}")
    twice = sorted({d for d in devices if devices.count(d) > 1})
    if twice:
        raise BadValue(f"device {', '.join(twice)} listed twice in {text!r}")
    return devices


@dataclass(frozen=True)
class DeviceShare:
    var: str
    devices: tuple[str, ...] | None  # None: not managed
    ports: range | None = None  # None: any free port outside the ephemeral range
    owner: str = "this run"

    def env(self, num_gpus: int, slot: int = 0) -> dict[str, str]:
        """The variable exposing a server's devices: the ``slot``-th ``num_gpus`` of the share (A/B's prestarted
        process pairs, see :meth:`slots`), the first ones when the share holds fewer."""
        if self.devices is None:
            return {}
        at = slot * num_gpus if (slot + 1) * num_gpus <= len(self.devices) else 0
        return {self.var: ",".join(self.devices[at : at + num_gpus])}

    def slots(self, num_gpus: int) -> int:
        """How many servers of ``num_gpus`` the share holds on devices of their own (0: devices not managed)."""
        return 0 if self.devices is None else len(self.devices) // max(num_gpus, 1)

    def skip_reason(self, num_gpus: int) -> str | None:
        if self.devices is None or num_gpus <= len(self.devices):
            return None
        return (
            f"needs {num_gpus} devices (num_gpus) but {self.owner} has {len(self.devices)} "
            f"({self.var}={','.join(self.devices)})"
        )


def device_share(devices: tuple[str, ...] | None, var: str, workers: int, worker_id: str | None) -> DeviceShare:
    """The share of ``worker_id`` (``gwI``) of ``workers``; the whole list outside xdist workers.

    ``workers`` > 0 without ``worker_id`` is the xdist controller: it checks there is a device per worker.
    """
    if worker_id is None:
        if workers and devices is not None and len(devices) < workers:
            raise DiffperfError(
                f"{workers} xdist workers but {len(devices)} device(s) ({var}={','.join(devices)}): "
                f"each worker needs its own; use -n {len(devices)} or fewer",
                source="-n",
            )
        return DeviceShare(var, devices)
    index = int(worker_id.removeprefix("gw"))
    span = len(WORKER_PORTS) // workers
    ports = range(WORKER_PORTS.start + index * span, WORKER_PORTS.start + (index + 1) * span)
    if devices is not None:
        size = len(devices) // workers
        devices = devices[index * size : (index + 1) * size]
    return DeviceShare(var, devices, ports, f"xdist worker {worker_id}")
