"""The ports servers are started on: outside the kernel's ephemeral range.

Outgoing connections and binds to port 0 take their ports from the ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``), at any moment: SGLang's CPU worker opens about 22 gloo
listeners there while it loads. A port chosen there and found free can be taken before the server binds
it (``Address already in use`` on P+1, the broker port, cost a 100 s restart: docs/sglang.md). Ports
outside that range are taken only by a process that asks for them by number.
"""

from __future__ import annotations

import sys
from pathlib import Path

LOCAL_PORT_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LINUX_EPHEMERAL = range(32768, 61000)  # Linux's default
IANA_EPHEMERAL = range(49152, 65536)  # macOS and Windows
FIRST_PORT = 20000  # far above the registered services most machines run
MIN_PORTS = 2000  # a range narrower than this is not worth keeping to


def ephemeral_ports(path: Path = LOCAL_PORT_RANGE) -> range:
    """The kernel's ephemeral port range (its default when the file is absent or unreadable)."""
    try:
        low, high = (int(word) for word in path.read_text().split())
    except (OSError, ValueError):
        return LINUX_EPHEMERAL if sys.platform.startswith("linux") else IANA_EPHEMERAL
    return range(low, high + 1)


def server_port_range(ephemeral: range | None = None) -> range:
    """The ports servers are given: from ``FIRST_PORT`` up to the ephemeral range, else above it; where neither
    leaves ``MIN_PORTS``, below ``FIRST_PORT`` from 10000 (never in the ephemeral range while any room is left)."""
    ephemeral = ephemeral_ports() if ephemeral is None else ephemeral
    below = range(FIRST_PORT, max(FIRST_PORT, ephemeral.start))
    above = range(max(ephemeral.stop, FIRST_PORT), 65536)
    low = range(10000, max(10000, min(FIRST_PORT, ephemeral.start)))
    return next((r for r in (below, above, low) if len(r) >= MIN_PORTS), max(below, above, low, key=len))
