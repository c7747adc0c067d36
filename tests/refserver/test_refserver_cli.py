"""Command line: flag errors, port handling, console script, warmup modes, perf-log line atomicity."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading

import pytest

from pytest_diffperf.protocol import PERF_LOG_FILE, PerfRecord
from pytest_diffperf.refserver.cli import main
from tests.support.refserver import SMALL_IMAGE


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest_diffperf.refserver", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["serve", "--model-path", "tiny/flux-t2i", "--bogus-flag"],
            "unrecognized arguments: --bogus-flag",
        ),
        (["serve", "--model-path", "tiny/nope"], "'tiny/nope' is neither a built-in model"),
        (
            ["serve", "--model-path", "tiny/flux-t2i", "--warmup-mode", "later"],
            "invalid choice: 'later'",
        ),
        (
            [
                "serve",
                "--model-path",
                "tiny/flux-t2i",
                "--warmup-sampling-params",
                "{bad",
            ],
            "not valid JSON",
        ),
        (
            [
                "serve",
                "--model-path",
                "tiny/flux-t2i",
                "--warmup-sampling-params",
                '{"size": "7x7"}',
            ],
            "width must be",
        ),
        (
            ["serve", "--model-path", "tiny/flux-t2i", "--inject-delay", "Nope=5"],
            "unknown stage 'Nope'",
        ),
        (
            ["serve", "--model-path", "tiny/flux-t2i", "--model-type", "llm"],
            "invalid choice: 'llm'",
        ),
    ],
)
def test_bad_flags_exit_2_with_message(args, message, capsys):
    with pytest.raises(SystemExit) as exited:
        main(args)  # every one is refused before the server binds or builds anything
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.server
@pytest.mark.parametrize("strict", [True, False])
def test_taken_port_fails_and_never_picks_another(strict):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["serve", "--model-path", "tiny/flux-t2i", "--port", str(port)] + (["--strict-ports"] if strict else [])
        proc = _run(*args)
    assert proc.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "not trying another port" in proc.stderr


def test_console_script():
    exe = shutil.which("diffperf-refserver")
    if exe is None:
        pytest.skip("package not installed with its console scripts")
    proc = subprocess.run([exe, "models"], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert [line.split("\t")[0] for line in proc.stdout.splitlines()] == [
        "tiny/flux-t2i",
        "tiny/sd-t2i",
        "tiny/flux-kontext-edit",
        "tiny/wan-t2v",
        "tiny/wan-i2v",
    ]
    bad = subprocess.run(
        [exe, "serve", "--model-path", "tiny/flux-t2i", "--port", "1", "--nope"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "unrecognized arguments: --nope" in bad.stderr


@pytest.mark.server
def test_warmup_mode_request_logs_only_the_real_request(start_server):
    server = start_server(
        "tiny/flux-t2i", "--warmup-mode", "request", "--num-threads", "2", "--memory-snapshots", "always"
    )
    assert "ready: tiny/flux-t2i" in server.output()
    payload, _ = server.image(**SMALL_IMAGE)
    records = server.records()
    assert [r.request_id for r in records] == [payload["id"]]
    assert records[0].memory_snapshots["warmup_peak"].peak_host_anon_mb > 0
    server.image(**SMALL_IMAGE)
    assert len(server.records()) == 2
    server.stop()


def test_perf_log_lines_stay_whole_under_concurrent_writers(tmp_path, monkeypatch):
    from pytest_diffperf.refserver.memory import MemoryTracker
    from pytest_diffperf.refserver.perflog import PerfLog

    monkeypatch.setenv("SGLANG_DIFFUSION_STAGE_LOGGING", "1")
    monkeypatch.setenv("SGLANG_PERF_LOG_DIR", str(tmp_path))
    logs = [
        PerfLog(),
        PerfLog(),
    ]  # two writers, as two servers sharing one directory would be
    stages = [(f"Stage{i}", 1.0) for i in range(50)]

    def write(log: PerfLog, tag: str) -> None:
        for i in range(100):
            log.write(f"{tag}-{i}", stages, [1.0] * 200, 100.0, MemoryTracker("always").snapshots())

    threads = [threading.Thread(target=write, args=(log, f"w{i}")) for i, log in enumerate(logs * 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = (tmp_path / PERF_LOG_FILE).read_text().splitlines()
    assert len(lines) == 400
    assert all(PerfRecord.model_validate(json.loads(line)).steps == [1.0] * 200 for line in lines)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--inject-delay", "DenoisingStage=nan"], "argument --inject-delay: delay must be a finite number >= 0"),
        (["--inject-delay", "step:0=inf"], "argument --inject-delay: delay must be a finite number >= 0"),
        (["--inject-jitter", "nan"], "argument --inject-jitter: must be a finite number >= 0, got 'nan'"),
        (["--inject-output-noise", "inf"], "argument --inject-output-noise: must be a finite number >= 0, got 'inf'"),
        (["--inject-load-delay", "nan"], "argument --inject-load-delay: must be a finite number >= 0, got 'nan'"),
        (["--port", "70000"], "argument --port: must be a port from 0 to 65535, got 70000"),
        (["--port", "-1"], "argument --port: must be a port from 0 to 65535, got -1"),
    ],
)
def test_non_finite_faults_and_ports_out_of_range_are_usage_errors(flags, message, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--model-path", "tiny/flux-t2i", *flags])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_thread_count_variable_that_is_no_count_is_a_usage_error(capsys, monkeypatch):
    monkeypatch.setenv("DIFFPERF_REFSERVER_THREADS", "many")
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--model-path", "tiny/flux-t2i"], fork=False)
    assert exited.value.code == 2
    assert "$DIFFPERF_REFSERVER_THREADS: expected a number of threads >= 1, got 'many'" in capsys.readouterr().err
