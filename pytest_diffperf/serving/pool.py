"""The servers of one pytest process: one running at a time, shared by every case of its group."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..platforms import DEVICE_ENV_VARS
from . import watchdog
from .launchers import Launcher, ServerSpec, get_launcher
from .process import (
    PROGRESS_EVERY_S,
    ServerError,
    ServerPorts,
    ServerProcess,
    port_taken,
    server_ports,
    short_command,
)
from .record import ServerRecord

PORT_RETRIES = 2  # starts again on other ports after a port was taken between the probe and the server's bind


@dataclass
class ServerStart:
    """One server start, for the results file and the launch counts."""

    group: str
    pid: int | None
    port: int
    log: str
    load_ms: float | None = None
    ready: bool = False
    error: str | None = None
    command: str = ""
    ended: str | None = None  # how it ended (``ServerProcess.ended``); None: still running
    devices: dict[str, str] = field(default_factory=dict)  # the devices it was given (its visible-devices variable)

    def record(self) -> ServerRecord:
        """The results file's record of a server start (``ServerProcess.record``'s fields, whether it got ready and
        why a failed start failed)."""
        return ServerRecord(
            pid=self.pid, port=self.port, load_ms=self.load_ms, log=self.log, devices=self.devices,
            command=self.command, ended=self.ended, ready=self.ready, error=self.error,
        )  # fmt: skip


@dataclass(frozen=True)
class ServerPlan:
    """What a server start runs: its command, the environment added to ours, its ports and its folder."""

    command: list[str]
    env: dict[str, str]
    ports: ServerPorts
    perf_dir: Path


@dataclass(frozen=True)
class _Pending:
    """A start begun: its spec, the process, its launch record and when it began."""

    spec: ServerSpec
    server: ServerProcess
    launch: ServerStart
    started: float


@dataclass
class ServerPool:
    """One process's server processes: at most one running, reused by every scenario of its group.

    Owns starting (on this process's ports and devices, a start begun ahead by :meth:`spawn`),
    reusing, restarting a server that died or hung, not retrying a group whose start failed, the
    record of every start (``launches``), and stopping (:meth:`release`). It does not measure: the
    caller sends the requests.
    """

    workdir: Path
    startup_timeout: float
    progress: Callable[[str], None] = lambda _msg: None
    device_env: Callable[[int], dict[str, str]] = lambda _num_gpus: {}  # num_gpus -> devices to expose
    ports: range | None = None  # None: any free port
    launcher: Launcher | None = None  # None: each spec's registered launcher (A/B: one side's)
    watch: tuple[int, ...] = ()  # processes besides this one whose death kills the servers (xdist's controller)
    progress_every: float = PROGRESS_EVERY_S  # seconds between progress lines while a server loads or a request runs
    label: str | None = None  # how progress lines name the next server (None: "server N"; A/B: its side and pair)
    before_start: Callable[[int], None] = lambda _num_gpus: None  # num_gpus -> raises ServerError: devices held
    on_ready: Callable[[ServerProcess], None] = lambda _server: None  # the run's interference meter adopts it
    launches: list[ServerStart] = field(default_factory=list)
    _current: tuple[ServerSpec, ServerProcess] | None = None
    _failed: dict[ServerSpec, ServerError] = field(default_factory=dict)
    _pending: _Pending | None = None  # a start spawn() began, not yet waited for

    def get(self, spec: ServerSpec) -> ServerProcess:
        """The running server for ``spec``: reused, or started (stopping any other first).

        A group whose server failed to start is not retried, unless a port it was given was taken meanwhile
        (started again on other ports, ``PORT_RETRIES`` times); one that died or hung later is restarted.
        A start :meth:`spawn` began for ``spec`` is waited for here.
        """
        pending, self._pending = self._pending, None
        if pending is not None and pending.spec == spec:
            try:
                return self._ready(pending)
            except ServerError as exc:
                self._port_taken(spec, exc)
        if self._current and self._current[0] == spec:
            server = self._current[1]
            try:
                server.check_alive("")
                if server.hung is None:
                    return server
            except ServerError:
                pass
            self.release()
        if spec in self._failed:
            raise self._failed[spec]
        self.release()
        for _ in range(PORT_RETRIES):
            try:
                return self._start(spec)
            except ServerError as exc:
                self._port_taken(spec, exc)
        return self._start(spec)

    def _port_taken(self, spec: ServerSpec, exc: ServerError) -> None:
        """Raise ``exc`` unless a port it was given was taken: not the group's failure, the next start gets others."""
        if not port_taken(exc):
            raise exc
        del self._failed[spec]
        self.progress(f"diffperf: {exc.headline(last_log_line=True)}: its port was taken; trying other ports")

    def plan(self, spec: ServerSpec, number: int | None = None, ports: ServerPorts | None = None) -> ServerPlan:
        """The command, environment, ports and folder of start ``number`` (default: the next) of ``spec``'s server,
        with free ports from the pool's range unless ``ports`` are given. Starts and creates nothing."""
        launcher = self.launcher or get_launcher(spec.launcher)
        perf_dir = self.workdir / f"server-{number or len(self.launches) + 1}"
        ports = ports or server_ports(ports=self.ports, replicas=spec.num_gpus)
        env = {**launcher.env(spec, perf_dir), **self.device_env(spec.num_gpus)}
        command = launcher.server_command(spec, ports) + launcher.output_args(spec, perf_dir)
        return ServerPlan(command, env, ports, perf_dir)

    def spawn(self, spec: ServerSpec) -> None:
        """Begin starting ``spec``'s server (stopping any other first) without waiting for it: the next
        :meth:`get` of ``spec`` waits until it is ready. A failed spawn is raised by that ``get``."""
        if spec in self._failed:
            return
        self.release()
        with contextlib.suppress(ServerError):  # get raises it (a failed start: from _failed)
            self._pending = self._spawn(spec)

    def _start(self, spec: ServerSpec) -> ServerProcess:
        return self._ready(self._spawn(spec))

    def _spawn(self, spec: ServerSpec) -> _Pending:
        self.before_start(spec.num_gpus)  # another process on the devices: said, waited for or refused
        number = len(self.launches) + 1
        plan = self.plan(spec, number)
        plan.perf_dir.mkdir(parents=True, exist_ok=True)
        server = ServerProcess(plan.command, plan.env, plan.perf_dir / "server.log", plan.ports.http, watch=self.watch)
        name = self.label or f"server {number}"
        server.label, server.progress, server.progress_every = name, self.progress, self.progress_every
        devices = {k: v for k, v in plan.env.items() if k in DEVICE_ENV_VARS}
        launch = ServerStart(
            spec.key, None, plan.ports.http, str(server.log_path), command=" ".join(plan.command), devices=devices
        )
        self.launches.append(launch)
        pending = _Pending(spec, server, launch, time.monotonic())
        self.progress(
            f"diffperf: starting {name} ({spec.model}): {short_command(server.command)}; log: {server.log_path}"
        )
        try:
            server.start()
            launch.pid = server.pid
            self._current = (spec, server)
        except ServerError as exc:
            raise self._failed_start(pending, exc) from None
        return pending

    def _ready(self, pending: _Pending) -> ServerProcess:
        server, launch = pending.server, pending.launch
        try:
            server.wait_ready(self.startup_timeout)
        except ServerError as exc:
            raise self._failed_start(pending, exc) from None
        launch.ready, launch.load_ms = True, server.load_ms
        self.on_ready(server)
        load = f" (load {server.load_ms / 1000:.1f} s)" if server.load_ms is not None else ""
        self.progress(f"diffperf: {server.label} ready after {time.monotonic() - pending.started:.1f} s{load}")
        return server

    def _failed_start(self, pending: _Pending, exc: ServerError) -> ServerError:
        """Record a failed start (not retried); the error to raise (with the missing program named)."""
        self.release()
        pending.launch.error = exc.headline(last_log_line=True)
        pending.launch.ended = pending.server.ended
        note = f"(startup failed after {time.monotonic() - pending.started:.1f} s)"
        problem = exc.problem
        if exc.server is not None and watchdog.CANNOT_START in exc.server.tail:  # no such program: say which, and why
            missing = (self.launcher or get_launcher(pending.spec.launcher)).missing_program()
            problem += f": {missing}" if missing else ""
        self._failed[pending.spec] = ServerError(problem, exc.server, note)
        return exc if problem == exc.problem else ServerError(problem, exc.server, exc.note)

    def release(self) -> None:
        self._pending = None
        if self._current:
            self._current[1].stop()
            self._update(self._current[1])
            self._current = None

    def _update(self, server: ServerProcess) -> None:
        for launch in self.launches:
            if launch.pid is not None and launch.pid == server.pid:
                launch.ended = server.ended

    def started_since(self, first: int) -> list[ServerRecord]:
        """The starts from the ``first``-th on, as the results file lists them (a running server's end as it is now:
        one that died mid-request says how)."""
        if self._current:
            self._update(self._current[1])
        return [launch.record() for launch in self.launches[first:]]

    def last_start(self, spec: ServerSpec) -> ServerStart | None:
        """The latest start of ``spec``'s server (None: never started)."""
        return next((launch for launch in reversed(self.launches) if launch.group == spec.key), None)

    def running(self) -> ServerSpec | None:
        return self._current[0] if self._current else None
