"""Device slices and port ranges of xdist workers."""

from __future__ import annotations

import socket

import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.platforms import device_env_var
from pytest_diffperf.serving.process import ServerError, free_port
from pytest_diffperf.sharding.devices import WORKER_PORTS, DeviceShare, device_share, visible_devices


@pytest.mark.parametrize(
    ("hardware", "var"),
    [(None, "CUDA_VISIBLE_DEVICES"), ("h100", "CUDA_VISIBLE_DEVICES"), ("cpu", "CUDA_VISIBLE_DEVICES"),
     ("npu", "ASCEND_RT_VISIBLE_DEVICES"), ("musa", "MUSA_VISIBLE_DEVICES"), ("xpu_b60", "ZE_AFFINITY_MASK")],
)  # fmt: skip
def test_the_platform_picks_the_variable(hardware, var):
    assert device_env_var(hardware) == var


def test_the_option_wins_over_the_environment_and_empty_means_unmanaged():
    env = {"CUDA_VISIBLE_DEVICES": "0, 1,2"}
    assert visible_devices(None, "CUDA_VISIBLE_DEVICES", env) == ("0", "1", "2")
    assert visible_devices(("5", "6"), "CUDA_VISIBLE_DEVICES", env) == ("5", "6")
    assert visible_devices(None, "ASCEND_RT_VISIBLE_DEVICES", env) is None
    assert visible_devices(None, "CUDA_VISIBLE_DEVICES", {"CUDA_VISIBLE_DEVICES": ""}) is None


@pytest.mark.parametrize("workers", [1, 2, 3, 4, 8])
def test_worker_slices_and_port_ranges_are_disjoint(workers):
    devices = tuple(str(d) for d in range(8))
    shares = [device_share(devices, "CUDA_VISIBLE_DEVICES", workers, f"gw{i}") for i in range(workers)]
    slices: list[tuple[str, ...]] = []
    port_ranges: list[range] = []
    for s in shares:
        assert s.devices is not None and s.ports is not None  # a worker's share is managed
        slices.append(s.devices)
        port_ranges.append(s.ports)
    used = [d for devs in slices for d in devs]
    assert len(used) == len(set(used)) == 8 // workers * workers
    assert all(len(devs) == 8 // workers for devs in slices)
    ports = [p for r in port_ranges for p in r]
    assert len(ports) == len(set(ports)) and set(ports) <= set(WORKER_PORTS)
    assert shares[-1].env(1) == {"CUDA_VISIBLE_DEVICES": devices[(workers - 1) * (8 // workers)]}


def test_a_server_gets_the_first_num_gpus_devices_of_its_slice():
    share = device_share(("0", "1", "2", "3"), "ASCEND_RT_VISIBLE_DEVICES", 2, "gw1")
    assert share.env(2) == {"ASCEND_RT_VISIBLE_DEVICES": "2,3"} and share.env(1) == {"ASCEND_RT_VISIBLE_DEVICES": "2"}
    assert share.skip_reason(2) is None
    assert (
        share.skip_reason(3) == "needs 3 devices (num_gpus) but xdist worker gw1 has 2 (ASCEND_RT_VISIBLE_DEVICES=2,3)"
    )


def test_unmanaged_devices_set_nothing_and_skip_nothing():
    share = device_share(None, "CUDA_VISIBLE_DEVICES", 2, "gw0")
    assert share.env(4) == {} and share.skip_reason(8) is None and share.ports is not None
    assert DeviceShare("CUDA_VISIBLE_DEVICES", None).ports is None  # outside xdist: any free port


def test_the_controller_needs_a_device_per_worker():
    assert device_share(("0", "1"), "CUDA_VISIBLE_DEVICES", 2, None).devices == ("0", "1")
    assert device_share(None, "CUDA_VISIBLE_DEVICES", 16, None).devices is None
    with pytest.raises(DiffperfError) as exc:
        device_share(("0",), "CUDA_VISIBLE_DEVICES", 2, None)
    assert (
        str(exc.value)
        == "-n: 2 xdist workers but 1 device(s) (CUDA_VISIBLE_DEVICES=0): each worker needs its own; use -n 1 or fewer"
    )


def test_free_port_stays_in_its_range():
    assert free_port(ports=range(20100, 20200)) in range(20100, 20200)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        port = busy.getsockname()[1]
        with pytest.raises(ServerError, match=f"^no free port on 127.0.0.1 in {port}-{port}$"):
            free_port(ports=range(port, port + 1))


def test_a_later_slot_gets_the_next_devices_where_the_share_holds_them():
    share = DeviceShare("CUDA_VISIBLE_DEVICES", ("4", "5", "6", "7"))
    assert (share.slots(1), share.slots(2), share.slots(3)) == (4, 2, 1)
    assert [share.env(2, slot)["CUDA_VISIBLE_DEVICES"] for slot in (0, 1, 2)] == ["4,5", "6,7", "4,5"]  # 2: shared
    assert share.env(3, 1) == share.env(3) == {"CUDA_VISIBLE_DEVICES": "4,5,6"}
    unmanaged = DeviceShare("CUDA_VISIBLE_DEVICES", None)
    assert (unmanaged.slots(1), unmanaged.env(1, 1)) == (0, {})
