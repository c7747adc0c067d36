"""Server ports outside the kernel's ephemeral range, whatever that range is."""

from __future__ import annotations

import pytest

from pytest_diffperf._util.ports import LINUX_EPHEMERAL, ephemeral_ports, server_port_range


@pytest.mark.parametrize(
    ("ephemeral", "expected"),
    [
        (range(32768, 61000), range(20000, 32768)),  # Linux's default: below it, from 20000
        (range(49152, 65536), range(20000, 49152)),  # macOS's
        (range(15000, 61000), range(61000, 65536)),  # no room below 20000's start: above it
        (range(1024, 64000), range(64000, 65536)),  # less than 2000 ports anywhere: the widest room left
    ],
)
def test_servers_get_ports_outside_the_ephemeral_range(ephemeral, expected):
    chosen = server_port_range(ephemeral)
    assert chosen == expected
    assert not set(chosen) & set(ephemeral)


def test_the_range_is_read_from_the_kernel_else_linuxs_default(tmp_path):
    given = tmp_path / "ip_local_port_range"
    given.write_text("40000\t50000\n")
    assert ephemeral_ports(given) == range(40000, 50001)
    assert ephemeral_ports(tmp_path / "absent") == LINUX_EPHEMERAL
    given.write_text("not numbers")
    assert ephemeral_ports(given) == LINUX_EPHEMERAL
