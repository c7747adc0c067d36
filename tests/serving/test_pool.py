"""The server pool: one start per group, a start whose port was taken meanwhile made again on other ports, and each
ready server adopted by the run's interference meter."""

from __future__ import annotations

import ast
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pytest_diffperf.launchers import ServerSpec
from pytest_diffperf.serving import pool as pool_module
from pytest_diffperf.serving.interference import BusyPolicy, Watch
from pytest_diffperf.serving.pool import PORT_RETRIES, ServerPool
from pytest_diffperf.serving.process import ServerError, ServerLog, ServerPorts, port_taken, server_ports
from tests.support.sglang import SRC

SPEC = ServerSpec("reference", "tiny/flux-t2i", "--warmup-mode off", (), 1)
TOP_LEVEL_KEYS = ["pid", "port", "load_ms", "log", "devices", "command", "ended", "ready", "error"]


@pytest.fixture
def taken() -> Iterator[socket.socket]:
    """A port another process listens on: what a server finds after the probe said it was free."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock


def first_ports_taken(monkeypatch, port: int, times: int) -> None:
    """The first ``times`` starts get ``port`` as their HTTP port, as if it was taken after the probe."""
    calls = []

    def racing(host: str = "127.0.0.1", ports: range | None = None, replicas: int = 1) -> ServerPorts:
        calls.append(port)
        real = server_ports(host, ports, replicas)
        return ServerPorts(port, real.scheduler, real.master) if len(calls) <= times else real

    monkeypatch.setattr(pool_module, "server_ports", racing)


@pytest.mark.server
def test_a_port_taken_after_the_probe_is_started_again_on_other_ports(tmp_path, monkeypatch, taken):
    port = taken.getsockname()[1]
    first_ports_taken(monkeypatch, port, 1)
    lines: list[str] = []
    watch = Watch(os.getpid(), BusyPolicy())
    pool = ServerPool(tmp_path, 120, lines.append, on_ready=watch.adopt)
    try:
        server = pool.get(SPEC)
        assert server.port != port
        assert [launch.ready for launch in pool.launches] == [False, True]
        # the ready one is the run's, whoever started it: the process on its port and the one that started that
        listener = next(
            c.pid
            for c in psutil.net_connections("tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == server.port
        )
        assert {pid for pid, _ in watch.servers.roots} == {listener, psutil.Process(listener).ppid()}
        assert "exited with code 1" in (pool.launches[0].error or "")
        retried = [line for line in lines if line.endswith("its port was taken; trying other ports")]
        assert len(retried) == 1 and "Address already in use" in retried[0], lines
        assert pool.get(SPEC) is server  # the group's server, once started
        failed, started = pool.started_since(0)  # the results file's servers: typed where the server started
        assert (failed.ready, started.ready, started.pid, started.port) == (False, True, server.pid, server.port)
        assert list(started.model_dump()) == TOP_LEVEL_KEYS
        paired = server.record(("candidate", 2)).model_dump()
        assert list(paired) == ["side", "process_pair", "ready_s", *TOP_LEVEL_KEYS[:7]]
        assert (paired["side"], paired["process_pair"], paired["ready_s"]) == ("candidate", 2, server.ready_s)
    finally:
        pool.release()


@pytest.mark.server
def test_a_port_taken_every_time_fails_after_the_retries(tmp_path, monkeypatch, taken):
    port = taken.getsockname()[1]
    first_ports_taken(monkeypatch, port, PORT_RETRIES + 1)
    pool = ServerPool(tmp_path, 120)
    with pytest.raises(ServerError) as failure:
        pool.get(SPEC)
    assert port_taken(failure.value)
    assert len(pool.launches) == PORT_RETRIES + 1
    with pytest.raises(ServerError):  # a failed group is not started again
        pool.get(SPEC)
    assert len(pool.launches) == PORT_RETRIES + 1


@pytest.mark.server
def test_another_startup_failure_is_not_retried(tmp_path):
    pool = ServerPool(tmp_path, 120)
    with pytest.raises(ServerError) as failure:
        pool.get(ServerSpec("reference", "tiny/flux-t2i", "--inject-fail-startup", (), 1))
    assert not port_taken(failure.value)
    assert "exited with code" in failure.value.headline()
    assert len(pool.launches) == 1


def failure(log_tail: str) -> ServerError:
    return ServerError(
        "exited with code 1 while starting", ServerLog("http://127.0.0.1:30000", "x", Path("log"), log_tail)
    )


def test_sglangs_strict_ports_error_reads_as_a_taken_port():
    """The error of SGLang's own check (``ServerArgs._require_port``, run from the vendored source, with every
    port unavailable): what a real ``sglang serve --strict-ports`` prints when a port was taken meanwhile."""
    path = SRC / "sglang/multimodal_gen/runtime/server_args/server_args.py"
    tree = ast.parse(path.read_text())
    server_args = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerArgs")
    check = next(n for n in server_args.body if isinstance(n, ast.FunctionDef) and n.name == "_require_port")
    check.decorator_list = []  # a staticmethod, called here as a plain function
    namespace: dict = {"is_port_available": lambda port: False}
    exec(compile(ast.Module([check], []), str(path), "exec"), namespace)
    with pytest.raises(RuntimeError) as raised:
        namespace["_require_port"](30000, "HTTP")
    assert port_taken(failure(f"Traceback (most recent call last):\nRuntimeError: {raised.value}"))
    assert port_taken(failure("OSError: [Errno 98] error while attempting to bind on address: address already in use"))
    assert not port_taken(failure("RuntimeError: CUDA out of memory"))
    assert not port_taken(ServerError("did not answer"))
