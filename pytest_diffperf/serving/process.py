"""One server process: spawn, tee its output, wait until ready, watch it, kill its whole tree."""

from __future__ import annotations

import collections
import contextlib
import os
import random
import re
import shlex
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
import requests

from .. import protocol
from .._util.lifecycle import exit_text
from .._util.ports import server_port_range
from ..errors import DiffperfFailure
from ..platforms import DEVICE_ENV_VARS
from ..verdicts.vocab import Side
from . import watchdog
from .record import ServerRecord

FATAL_PATTERNS = (
    "Fatal Python error:",
    "Segmentation fault",
    "terminate called after throwing",
    "Aborted (core dumped)",
)
# A server that gives up on its own start says why in one line, then ends itself (SGLang 0.5.23 SIGTERMs its own
# process group): that line is the reason, quoted in the failure's headline.
ABORT_PATTERNS = ("Server warmup failed; aborting startup:",)
TAIL_LINES = 200  # log lines kept for failure messages (access-log lines not counted)
PROGRESS_EVERY_S = 15.0
HEALTH_POLL_S = 1.0  # as SGLang's harness polls /health
PORT_TRIES = 100
# A port found free, then bound by another process before the server could: errno EADDRINUSE as uvicorn, ZMQ,
# torch.distributed and the reference server print it, and SGLang's own check under --strict-ports (lowercase).
PORT_TAKEN = ("address already in use", "is unavailable and --strict-ports is enabled")
LINE_WIDTH = 160  # a log line or command quoted in a progress line is cut here
# uvicorn's (SGLang's) access log: `INFO:     127.0.0.1:51234 - "GET /health HTTP/1.1" 200 OK`
ACCESS_LOG = re.compile(r'"(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) \S+ HTTP/\d(?:\.\d)?" \d{3}')
# a line that says why a process died: an exception (``RuntimeError: ...``), ``error:``, a fatal signal
ERROR_LINE = re.compile(r"(?i)(?:error|exception)\b|fatal|segmentation fault|aborted|killed")

# Every process of one server (watchdog, server, its workers) carries this variable with the server's own token,
# so that a server whose watchdog was SIGKILLed (it then cannot stop it) is still found and stopped.
SERVER_ID_VAR = "PYTEST_DIFFPERF_SERVER_ID"

Progress = Callable[[str], None]


def is_access_line(line: str) -> bool:
    """An HTTP access-log line (health polls, video-job polls, requests): left out of log tails."""
    return ACCESS_LOG.search(line) is not None


def shorten(text: str, width: int = LINE_WIDTH) -> str:
    """``text`` on one line, cut to ``width`` characters (an ellipsis marks the cut)."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def short_command(command: list[str], width: int = LINE_WIDTH) -> str:
    """A command for a progress line: the program's base name (``python``, ``sglang``), then its arguments, cut."""
    program = Path(command[0]).name if command else ""
    program = "python" if program.startswith("python") else program
    return shorten(shlex.join([program, *command[1:]]), width)


@dataclass(frozen=True)
class ServerLog:
    """Where to look when a server fails: its address, its command, its log and the log's last lines.

    ``tail`` holds the last ``TAIL_LINES`` lines that are not access-log lines; ``left_out`` counts
    the access-log lines (health polls, job polls) the log had.
    """

    url: str
    command: str
    path: Path
    tail: str
    left_out: int = 0

    def lines(self) -> list[str]:
        return self.tail.splitlines()

    def section(self, lines: int = TAIL_LINES) -> str:
        kept = self.lines()[-lines:] if lines > 0 else []
        note = f", {self.left_out} access-log line(s) left out" if self.left_out else ""
        head = f"log: {self.path}"
        return head if not kept else f"{head}\n--- last {len(kept)} log line(s){note} ---\n" + "\n".join(kept)


class Heartbeat:
    """A progress line at most every ``every`` seconds while something runs: what it is, how long it has
    taken, a status (a video job's progress) and the server log's last line."""

    def __init__(self, progress: Progress, what: str, every: float, last_line: Callable[[], str] = lambda: ""):
        self.progress = progress
        self.what = what
        self.every = every
        self.last_line = last_line
        self.started = time.monotonic()
        self.due = self.started + every

    def tick(self, status: str = "") -> None:
        """Write the line if it is due."""
        now = time.monotonic()
        if now < self.due:
            return
        self.due = now + self.every
        parts = [f"diffperf: {self.what}: {now - self.started:.0f} s", *([status] if status else [])]
        last = self.last_line()
        if last:
            parts.append(f"log: {shorten(last)}")
        self.progress("; ".join(parts))


class ServerFailure(DiffperfFailure):
    """A failure seen on a server: the problem and, when known, the server's log (``str`` shows both)."""

    def __init__(self, problem: str, server: ServerLog | None = None, note: str = ""):
        self.problem = problem
        self.server = server
        self.note = note
        where = problem if server is None else f"server {server.url} {problem}"
        text = where if server is None else f"{where}\ncommand: {server.command}\n{server.section()}"
        super().__init__(f"{text}\n{note}" if note else text)

    def headline(self, last_log_line: bool = False) -> str:
        """The problem on one line, without the command and the log tail.

        With ``last_log_line``, why the server died is appended: :func:`last_words` of its log.
        """
        text = " ".join((self.problem if self.server is None else f"server {self.server.url} {self.problem}").split())
        words = last_words(self.server.tail) if self.server and last_log_line else None
        return text if words is None else f"{text}; {words[0]}: {words[1]}"


def last_words(tail: str) -> tuple[str, str] | None:
    """The log line that says why a server died, and what it is: the last line naming an error when one does (a
    line another thread printed after it, such as uvicorn's "Application startup complete.", is not the cause),
    else the last line; None for an empty log."""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    errors = [line for line in lines if ERROR_LINE.search(line)]
    if errors:
        return "last error in its log", errors[-1]
    return ("last log line", lines[-1]) if lines else None


class ServerError(ServerFailure):
    """The server failed: did not start, died, hung or printed a fatal pattern."""


def port_taken(error: ServerFailure) -> bool:
    """The server's log says a port it was given was taken: found free, bound by someone else before the server."""
    tail = error.server.tail.lower() if error.server is not None else ""
    return any(pattern in tail for pattern in PORT_TAKEN)


def free_port(host: str = "127.0.0.1", ports: range | None = None) -> int:
    """A port nothing listens on, from ``ports`` (tried in random order; default: every port outside the kernel's
    ephemeral range, ``_util.ports``), so that no outgoing connection or port-0 bind takes it before the server."""
    ports = server_port_range() if ports is None else ports
    for port in random.sample(ports, len(ports)):
        if _is_free(host, port):
            return port
    raise ServerError(f"no free port on {host} in {_span(ports)}")


@dataclass(frozen=True)
class ServerPorts:
    """A server's ports: HTTP (``http + 1`` is free too: SGLang's broker binds it), scheduler (with the
    ``replicas - 1`` ports after it: SGLang's data-parallel replicas bind ``scheduler + i``) and master."""

    http: int
    scheduler: int
    master: int
    replicas: int = 1

    def all(self) -> list[int]:
        """Every port the server binds by number."""
        return [self.http, self.http + 1, *range(self.scheduler, self.scheduler + self.replicas), self.master]


def server_ports(host: str = "127.0.0.1", ports: range | None = None, replicas: int = 1) -> ServerPorts:
    """Free, distinct ports for one server, from ``ports`` (an xdist worker's range; default: every port outside
    the ephemeral range): HTTP and HTTP + 1, ``replicas`` scheduler ports in a row, and the master port."""
    ports = server_port_range() if ports is None else ports
    taken: set[int] = set()

    def block(size: int, what: str) -> int:
        for _ in range(PORT_TRIES):
            first = free_port(host, ports)
            span = range(first, first + size)
            if span[-1] in ports and taken.isdisjoint(span) and all(_is_free(host, p) for p in span[1:]):
                taken.update(span)
                return first
        raise ServerError(f"no free {what} on {host} in {_span(ports)}")

    http = block(2, "pair of ports (port, port + 1)")
    scheduler = block(replicas, "scheduler port" if replicas == 1 else f"{replicas} scheduler ports in a row")
    return ServerPorts(http, scheduler, block(1, "master port"), replicas)


def _is_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def _span(ports: range) -> str:
    return f"{ports.start}-{ports.stop - 1}"


class ServerProcess:
    """A server started under a watchdog (``serving.watchdog``) that kills its whole tree should this
    process (or one of ``watch``, e.g. an xdist controller) die, whatever kills it."""

    def __init__(
        self,
        command: list[str],
        env: dict[str, str],
        log_path: Path,
        port: int,
        host: str = "127.0.0.1",
        watch: Sequence[int] = (),
    ):
        self.label = f"server on port {port}"  # how progress lines name it (the pool: "server N")
        self.progress: Progress = lambda _msg: None  # progress lines while it loads and while requests run
        self.progress_every = PROGRESS_EVERY_S
        self.command = command
        self.watch = tuple(watch)
        self.ended: str | None = None  # how it ended: "exit code 1", "signal SIGKILL", "timeout: ...", "stopped"
        self.hung: str | None = None  # what it did not answer in time: it must not serve again
        self.env = env
        self.log_path = log_path
        self.port = port
        self.base_url = f"http://{host}:{port}"
        self.load_ms: float | None = None
        self.ready_s: float | None = None  # from spawn until /health answered 200
        self.perf_log: Path = log_path.parent / protocol.PERF_LOG_FILE
        self.fatal: str | None = None
        self.aborted: str | None = None  # the line in which the server said it gave up starting (ABORT_PATTERNS)
        self._tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._left_out = 0  # access-log lines, not kept in the tail
        self._proc: subprocess.Popen[bytes] | None = None
        self._spawn_ns = 0
        self._reader: threading.Thread | None = None
        self.token = uuid.uuid4().hex

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._spawn_ns = time.monotonic_ns()
        try:
            self._proc = subprocess.Popen(
                watchdog.wrap(self.command, (os.getpid(), *self.watch)),
                env={**os.environ, **self.env, SERVER_ID_VAR: self.token},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise ServerError(f"cannot start {self.command[0]!r}: {exc.strerror}") from None
        self._reader = threading.Thread(target=self._tee, name=f"diffperf-tee-{self.port}", daemon=True)
        self._reader.start()

    def wait_ready(self, timeout: float, progress: Progress | None = None, every: float | None = None) -> None:
        """Poll /health (each second, as SGLang) until 200; fail at once if the process exits, or at the next poll if
        it prints a fatal pattern.

        ``progress`` (default: the server's own) receives a line every ``every`` seconds (default: the
        server's ``progress_every``) while waiting: the time so far and the log's last line.
        """
        beat = self.heartbeat("loading", progress, every)
        start = beat.started
        while True:
            self.check_alive("while starting")
            polled = time.monotonic()
            try:  # a port that listens but does not answer yet (still loading, or not ours) waits one poll, not more
                if requests.get(self.base_url + protocol.HEALTH_PATH, timeout=HEALTH_POLL_S).status_code == 200:
                    self.ready_s = (time.monotonic_ns() - self._spawn_ns) / 1e9
                    return
            except requests.RequestException:
                pass
            now = time.monotonic()
            if now - start > timeout:
                self.ended = self.ended or f"timeout: not ready after {timeout:.0f} s"
                raise ServerError(f"not ready after {timeout:.0f} s (--diffperf-startup-timeout)", self.snapshot())
            beat.tick()
            self._wait_exit(max(0.0, min(polled + HEALTH_POLL_S, beat.due, start + timeout) - now) + 0.01)

    def _wait_exit(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when the process ends: a start that fails is reported at once, not a poll later."""
        assert self._proc is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=seconds)

    def heartbeat(self, what: str, progress: Progress | None = None, every: float | None = None) -> Heartbeat:
        """Progress lines for ``what`` (``loading``, ``request 2``) on this server, with its log's last line."""
        return Heartbeat(
            progress or self.progress,
            f"{self.label} {what}",
            self.progress_every if every is None else every,
            self.last_line,
        )

    def last_line(self) -> str:
        """The last non-empty line of the log that is not an access-log line ('' when none)."""
        return next((line for line in reversed(list(self._tail)) if line.strip()), "")  # a copy: the tee appends

    def check_alive(self, when: str) -> None:
        if self.fatal:
            self.ended = self.ended or f"fatal error: {self.fatal}"
            raise ServerError(f"printed a fatal error {when}: {self.fatal}", self.snapshot())
        code = self._proc.poll() if self._proc else None
        if code is not None:
            orphans = self._close_output()
            self.ended = self.ended or exit_text(code)
            how = f"was killed by {exit_text(code)}" if code < 0 else f"exited with code {code}"
            if orphans:
                how = (
                    f"watchdog (pid {self.pid}) was killed by {exit_text(code)}, so its server process(es) "
                    f"{', '.join(map(str, orphans))} were stopped"
                )
            reason = f": {shorten(self.aborted)}" if self.aborted else ""
            raise ServerError(f"{how} {when}{reason}", self.snapshot())

    def timed_out(self, what: str) -> None:
        """``what`` (a request) got no answer in time: the server is hung, and is never used again."""
        self.hung = what
        self.ended = self.ended or f"timeout: no answer to {what}"

    def stop(self) -> None:
        """Kill the whole process tree (children first), wait, and close its output and the log."""
        if self._proc is None:
            return
        if self._proc.poll() is not None:
            self.ended = self.ended or exit_text(self._proc.returncode)
        kill_tree(self._proc.pid)
        self._proc.wait()
        self.ended = self.ended or "stopped"
        self._close_output()

    def _close_output(self) -> list[int]:
        """Once the watchdog has exited: stop what it left running (it was SIGKILLed), let the tee read the rest,
        then close the pipe; the pids of the processes it left."""
        assert self._proc is not None
        left = stop_marked(self.token) if (self._proc.returncode or 0) < 0 else []
        if self._reader:
            self._reader.join(timeout=5)
        if self._proc.stdout and not (self._reader and self._reader.is_alive()):
            self._proc.stdout.close()  # not while the tee reads: closing a reader another thread reads would block
        return left

    def record(self, pair: tuple[Side, int] | None = None) -> ServerRecord:
        """The results file's record of this server (an A/B ``pair``'s: its side, process pair and ready time)."""
        paired = {"side": pair[0], "process_pair": pair[1], "ready_s": self.ready_s} if pair else {}
        devices = {k: v for k, v in self.env.items() if k in DEVICE_ENV_VARS}
        return ServerRecord.model_validate({
            **paired, "pid": self.pid, "port": self.port, "load_ms": self.load_ms, "log": str(self.log_path),
            "devices": devices, "command": " ".join(self.command), "ended": self.ended,
        })  # fmt: skip

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    # -- output ----------------------------------------------------------------------------------
    def _tee(self) -> None:
        assert self._proc is not None
        assert self._proc.stdout is not None
        with open(self.log_path, "ab") as log, contextlib.suppress(ValueError, OSError):  # the pipe closed by stop
            for raw in self._proc.stdout:
                log.write(raw)
                log.flush()
                line = raw.decode("utf-8", "replace").rstrip("\n")
                if is_access_line(line):
                    self._left_out += 1
                else:
                    self._tail.append(line)
                marker = protocol.parse_load_marker(line)
                if marker is not None and self.load_ms is None:
                    self.load_ms = (marker - self._spawn_ns) / 1e6
                if self.fatal is None and any(p in line for p in FATAL_PATTERNS):
                    self.fatal = line.strip()
                if self.aborted is None:
                    self.aborted = next((line[line.index(p) :].strip() for p in ABORT_PATTERNS if p in line), None)

    def tail(self) -> str:
        return "\n".join(self._tail)

    def snapshot(self) -> ServerLog:
        """The server's log as it is now, for a failure message."""
        return ServerLog(self.base_url, " ".join(self.command), self.log_path, self.tail(), self._left_out)

    def log_section(self) -> str:
        return self.snapshot().section()


def stop_marked(token: str, grace: float = 5.0) -> list[int]:
    """Kill the processes whose environment holds ``SERVER_ID_VAR=token`` (a server its dead watchdog left); their pids."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get(SERVER_ID_VAR) == token and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    for proc in found:
        kill_tree(proc.pid, grace)
    return [proc.pid for proc in found]


def kill_tree(pid: int, grace: float = 5.0) -> None:
    """SIGTERM the process and its descendants, then SIGKILL what is left after ``grace`` seconds."""
    try:
        parent = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    procs = [*parent.children(recursive=True), parent]
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    psutil.wait_procs(alive, timeout=grace)
