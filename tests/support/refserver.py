"""Helpers for the refserver tests: real server processes on 127.0.0.1 (no mocks)."""

from __future__ import annotations

import base64
import io
import json
import os
import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import requests
from PIL import Image

from pytest_diffperf.launchers import ReferenceLauncher, ServerSpec
from pytest_diffperf.protocol import PERF_LOG_FILE, PerfRecord
from pytest_diffperf.serving.process import free_port, kill_tree

STARTUP_TIMEOUT_S = 300  # a loaded machine (xdist workers, other jobs) can take minutes; ready is polled
# Small shapes keep the suite fast on a 2-core box.
SMALL_IMAGE = {
    "prompt": "a red fox in fresh snow",
    "size": "128x128",
    "num_inference_steps": 4,
    "seed": 7,
}


FIXTURE_PIDS: set[int] = set()  # the tests' own servers (shared ones outlive a test): not the plugin's


class Server:
    """A ``python -m pytest_diffperf.refserver serve`` process and helpers to talk to it."""

    def __init__(self, workdir: Path, model: str, args: list[str], port: int | None = None):
        self.workdir = workdir
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_dir = workdir / "perf"
        self.stdout_path, self.stderr_path = (
            workdir / "stdout.txt",
            workdir / "stderr.txt",
        )
        # the command and environment the plugin starts it with (ReferenceLauncher), quieter
        spec = ServerSpec("reference", model, shlex.join(["--log-level", "warning", *args]), (), 1)
        launcher = ReferenceLauncher()
        env = {**os.environ, **launcher.env(spec, self.log_dir), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
        env.pop("DIFFPERF_REFSERVER_THREADS", None)
        cmd = launcher.command(spec, self.port)
        self.spawn_ns = time.monotonic_ns()
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=workdir)
        FIXTURE_PIDS.add(self.proc.pid)
        self.health_seen: list[int] = []

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> Server:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                code = requests.get(self.url + "/health", timeout=2).status_code
            except (requests.ConnectionError, requests.Timeout):  # not listening yet, or too busy loading to answer
                code = 0
            self.health_seen.append(code)
            if code == 200:
                return self
            time.sleep(0.1)
        raise TimeoutError(f"server not ready after {timeout}s:\n{self.output()}")

    def wait_exit(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def output(self) -> str:
        return self.stdout_path.read_text(errors="replace") + self.stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        kill_tree(self.proc.pid)
        self.proc.wait(timeout=10)

    # ---- API helpers ------------------------------------------------------------------------
    def post(self, path: str, body: dict | None = None, timeout: float = 120, **kw) -> requests.Response:
        return requests.post(self.url + path, json=body, timeout=timeout, **kw)

    def image(self, timeout: float = 120, **body) -> tuple[dict, bytes]:
        resp = self.post("/v1/images/generations", body, timeout=timeout)
        assert resp.status_code == 200, resp.text
        payload = resp.json()
        return payload, base64.b64decode(payload["data"][0]["b64_json"])

    def video(self, timeout: float = 120, **body) -> tuple[dict, list[int]]:
        """Create a video job and poll it to a final state; returns (final job, progress values seen)."""
        resp = self.post("/v1/videos", body)
        assert resp.status_code == 200, resp.text
        job = resp.json()
        progress = [job["progress"]]
        deadline = time.monotonic() + timeout
        while job["status"] not in ("completed", "failed"):
            assert time.monotonic() < deadline, job
            time.sleep(0.02)
            job = requests.get(f"{self.url}/v1/videos/{job['id']}", timeout=10).json()
            progress.append(job["progress"])
        return job, progress

    def records(self) -> list[PerfRecord]:
        path = self.log_dir / PERF_LOG_FILE
        if not path.exists():
            return []
        return [PerfRecord.model_validate(json.loads(line)) for line in path.read_text().splitlines()]

    def record(self, request_id: str) -> PerfRecord:
        matches = [r for r in self.records() if r.request_id == request_id]
        assert len(matches) == 1, f"{len(matches)} records for {request_id}"
        return matches[0]


class Servers:
    """Reference servers started for tests, stopped together by the fixture that owns them.

    ``start`` always starts a new one (a test that changes the server: faults, crashes); ``shared``
    starts one per model and arguments and hands the same running server to every later caller, for
    tests that only read from it (see CONTRIBUTING.md, "A shared server")."""

    def __init__(self, workdir: Callable[[], Path]):
        self.workdir = workdir
        self.started: list[Server] = []
        self.by_key: dict[tuple[str, ...], Server] = {}

    def start(self, model: str, *args: str, wait: bool = True, port: int | None = None) -> Server:
        server = Server(self.workdir(), model, list(args), port)
        self.started.append(server)
        return server.wait_ready() if wait else server

    def shared(self, model: str, *args: str) -> Server:
        key = (model, *args)
        if key not in self.by_key:
            self.by_key[key] = self.start(model, *args)
        return self.by_key[key]

    def stop(self) -> None:
        for server in self.started:
            server.stop()


def png_size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as img:
        return img.size


def stage_ms(record: PerfRecord) -> dict[str, float]:
    return {s.name: s.execution_time_ms for s in record.stages}
