"""The reference server held against SGLang's real one: the same case, the same requests, both started as the
plugin starts them; what differs is exactly docs/refserver.md's table "Where it differs from sglang serve on CPU".

Each server is observed from its spawn: ``/health`` until it answers 200 (every other answer seen on the way),
its load marker, then the bundled case's request sent twice as SGLang's harness sends it (the response's fields),
its perf-log records (keys, stage names, step count) and the files it wrote in its folder or working directory.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest
import requests

from pytest_diffperf.cases import load_cases
from pytest_diffperf.protocol import HEALTH_PATH, PERF_LOG_FILE
from pytest_diffperf.serving import client
from pytest_diffperf.serving.launchers import ServerSpec, get_launcher
from pytest_diffperf.serving.pool import ServerPool
from tests.support.paths import REPO
from tests.support.sglang_server import CASES, MODELS_ENV, SCENARIO, models_dir, requires_sglang

pytestmark = [pytest.mark.server, pytest.mark.sglang_server, requires_sglang]

TABLE = "## Where it differs from sglang serve on CPU"
REQUESTS = 2


def observe(launcher: str, workdir: Path) -> dict[str, object]:
    """What one server shows, by aspect (the names docs/refserver.md's table uses)."""
    case = load_cases(CASES)[SCENARIO]
    spec = ServerSpec.for_case(case, launcher)
    pool = ServerPool(workdir, startup_timeout=600, launcher=get_launcher(launcher))
    answers: set[str] = set()
    ready = threading.Event()

    def poll_health() -> None:  # from the spawn until the pool has seen /health answer 200
        while not ready.is_set():
            if pool.launches:
                try:
                    status = requests.get(f"http://127.0.0.1:{pool.launches[-1].port}{HEALTH_PATH}", timeout=2)
                except requests.RequestException:
                    answers.add("no answer")
                else:
                    if status.status_code != 200:
                        answers.add(str(status.status_code))
            time.sleep(0.25)

    poller = threading.Thread(target=poll_health, daemon=True)
    poller.start()
    try:
        server = pool.get(spec)
        ready.set()
        url = server.base_url
        responses = [requests.post(url + client.endpoint(case), json=client.request_body(case), timeout=300).json()
                     for _ in range(REQUESTS)]  # fmt: skip
        models = requests.get(url + "/v1/models", timeout=10).json()
    finally:
        ready.set()
        poller.join()
        pool.release()
    records = [json.loads(line) for line in server.perf_log.read_text().splitlines()]
    folder = server.log_path.parent
    written = [p for p in folder.rglob("*") if p.is_file() and p.name not in ("server.log", PERF_LOG_FILE)]
    return {
        "health before ready": sorted(answers),
        "load marker": server.load_ms is not None,
        "response fields": sorted(responses[0]),
        "response data fields": sorted(responses[0]["data"][0]),
        "perf record keys": sorted(records[0]),
        "perf records": len(records),
        "stage names": [s["name"] for s in records[0]["stages"]],
        "denoise steps": len(records[0]["steps"]),
        "memory snapshots": sorted(records[0]["memory_snapshots"]),
        "model id": [m["id"] for m in models["data"]],
        "files written per request": len(written) // REQUESTS,
    }


def documented() -> set[str]:
    """The aspects docs/refserver.md's table lists as different (its first column)."""
    text = (REPO / "docs/refserver.md").read_text()
    section = text.split(TABLE, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| aspect")]
    return {re.sub(r"`", "", row.split("|")[1]).strip() for row in rows}


def test_the_reference_server_differs_from_sglang_only_where_the_docs_say(tmp_path_factory, monkeypatch):
    monkeypatch.setenv(MODELS_ENV, str(models_dir(tmp_path_factory)))
    monkeypatch.setenv("TMPDIR", str(tmp_path_factory.mktemp("tmp")))  # the servers' own temp files (SGLang's IPC)
    real = observe("sglang", tmp_path_factory.mktemp("sglang"))
    ours = observe("reference", tmp_path_factory.mktemp("reference"))
    differs = {aspect for aspect in real if real[aspect] != ours[aspect]}
    found = "\n".join(f"{a}: sglang {real[a]!r}, reference {ours[a]!r}" for a in sorted(differs))
    assert differs == documented(), f"docs/refserver.md's table must list exactly these:\n{found}"
    for aspect in ("load marker", "perf records", "stage names", "perf record keys"):  # what the plugin relies on
        assert aspect not in differs, found
