"""The reference server's fork server for the test session: started once per process when server tests run.

Each reference server a test starts (the plugin's, a fixture's, a benchmark's) then forks from it in
about half a second instead of importing torch, transformers and diffusers for ~6 CPU-s
(``pytest_diffperf.refserver.forkserver``). A test that must start servers as users' runs do removes
``FORKSERVER_ENV`` from the environment (``monkeypatch.delenv``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_diffperf.protocol import FORKSERVER_ENV

LISTEN_TIMEOUT_S = 30
SWITCH_ENV = "DIFFPERF_TEST_FORKSERVER"  # "off": every server imports its libraries itself, as users' runs do


def available() -> bool:
    """The reference server can run here (its extra installed) and fork (Linux), and the switch is not off."""
    return (
        os.environ.get(SWITCH_ENV, "on") != "off"
        and sys.platform.startswith("linux")
        and all(importlib.util.find_spec(name) is not None for name in ("torch", "diffusers", "uvicorn"))
    )


class ForkServer:
    """``diffperf-refserver forkserver`` on a socket in a private temp folder."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="diffperf-forks-"))
        self.socket = self.folder / "sock"
        self.log = open(self.folder / "forkserver.log", "wb")  # noqa: SIM115 - closed by stop
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_diffperf.refserver", "forkserver", "--socket", str(self.socket)],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + LISTEN_TIMEOUT_S
        while not self.socket.exists() and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)  # it listens before it imports: a server started now waits for the imports
        self.address = f"{self.proc.pid}:{self.socket}"  # FORKSERVER_ENV's value

    def publish(self) -> ForkServer:
        """Name it in this process's environment: every reference server started from here on forks from it."""
        os.environ[FORKSERVER_ENV] = self.address
        return self

    def stop(self) -> None:
        if os.environ.get(FORKSERVER_ENV) == self.address:
            del os.environ[FORKSERVER_ENV]
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)
