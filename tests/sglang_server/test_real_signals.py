"""SIGTERM and SIGKILL of pytest while SGLang's real server answers a request leave no SGLang process (its HTTP
process, scheduler and worker children, resource tracker) and no port held.

The server imports a copy of ``sglang`` whose denoising stage sleeps 120 s (``$DIFFPERF_TEST_DENOISE_SLEEP_S``), so
the first request is still running when the signal comes; every process of the server carries a marker variable,
by which the test finds what is left.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid

import psutil
import pytest

from tests.support.processes import gone, marked
from tests.support.sglang_server import (
    BASELINES,
    MODELS_ENV,
    SLEEP_ENV,
    bundled_args,
    candidate_package,
    case_file,
    listening,
    models_dir,
    ports_of,
    requires_sglang,
)
from tests.support.signals import python_with_default_signals
from tests.support.suite import kill_trees

pytestmark = [pytest.mark.server, pytest.mark.sglang_server, requires_sglang]

MARKER_VAR = "DIFFPERF_SGLANG_SIGNAL_TEST"
SERVE_ARGS = "--warmup-mode off --dit-precision fp32 --vae-precision fp32 --text-encoder-precisions fp32 fp32"
READY_WITHIN_S = 600.0  # an SGLang start on a busy 2-core machine: 40-110 s; a request's model load on top
GONE_WITHIN_S = 30.0  # the watchdog's grace, and SGLang's own shutdown of its scheduler


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return models_dir(tmp_path_factory)


def serving_a_request(tag: str, run: subprocess.Popen[bytes]) -> list[int]:
    """Wait until the marked ``sglang serve`` holds a client connection on its HTTP port; every port it binds."""
    deadline = time.monotonic() + READY_WITHIN_S
    while time.monotonic() < deadline:
        assert run.poll() is None, "pytest ended before a request was in flight"
        for proc in marked(MARKER_VAR, tag):
            try:
                command = " ".join(proc.cmdline())
                if " serve " not in command or "pytest_diffperf.serving.watchdog" in command:
                    continue
                http = int(re.findall(r"--port[ =](\d+)", command)[0])
                conns = proc.net_connections(kind="tcp")
            except (psutil.Error, IndexError):
                continue
            if any(c.status == psutil.CONN_ESTABLISHED and c.laddr.port == http for c in conns):
                return ports_of(command)
        time.sleep(0.5)
    raise AssertionError(f"no request in flight within {READY_WITHIN_S:.0f} s")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_no_sglang_process_or_port_outlives_pytest(tmp_path, models, sig):
    tag = uuid.uuid4().hex
    candidate = candidate_package(tmp_path / "candidate")
    env = {MARKER_VAR: tag, SLEEP_ENV: "120", "PYTHONPATH": str(candidate)}
    cases = case_file(tmp_path / "cases.json", serve_args=SERVE_ARGS, env=env)
    args = bundled_args(BASELINES, "--diffperf-startup-timeout=600", cases=cases)
    run = subprocess.Popen(
        python_with_default_signals("-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), *args),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, MODELS_ENV: str(models), "TMPDIR": str(tmp_path)},
        start_new_session=True,  # as a terminal job: only pytest gets the signal
    )
    try:
        ports = serving_a_request(tag, run)
        assert listening(ports)  # the server holds them while it serves
        run.send_signal(sig)
        run.wait(timeout=120)
        left = gone(MARKER_VAR, tag, GONE_WITHIN_S)
        assert left == [], [" ".join(p.cmdline()) for p in left]
        assert listening(ports) == [], f"ports still held after {sig.name}"
    finally:
        kill_trees([run.pid, *(p.pid for p in marked(MARKER_VAR, tag))])
        run.wait()
