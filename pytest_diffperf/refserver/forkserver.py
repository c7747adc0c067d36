"""The fork server: one process imports the reference server's libraries once and forks each ``serve``.

A reference server's start costs about 9 CPU-s, 6 of them importing torch, transformers and
diffusers. ``diffperf-refserver forkserver --socket PATH`` imports them once, then listens on a Unix
socket. A ``serve`` whose environment names it (``protocol.FORKSERVER_ENV``, ``PID:PATH``) sends its
arguments, environment, working folder and standard streams there, and the fork server forks a
child that runs ``serve`` with them. The ``serve`` process stays the server's stand-in for whoever
started it: it relays stop signals to the child and ends as the child ends (its exit code, or the
same signal). If the stand-in dies, the fork server kills the child; if the fork server dies, its
children die. A ``serve`` that differs from the fork server in what imports read (the interpreter,
``sys.path``, variables such as ``OMP_*``, ``HF_*``, ``TORCH_*``, the files of this package, wherever
it lies) is refused and runs in its own process, as it does when no fork server is named or it
cannot be reached.

Started by a user's job before pytest (docs/refserver.md) or by the test suite, one per worker; never by the
plugin.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.machinery
import json
import os
import selectors
import signal
import socket
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from .. import protocol
from .._util.lifecycle import die_with_parent

# What a forked server would otherwise import itself: its modules, the server stack, the diffusers classes it builds.
PRELOAD = (
    "pytest_diffperf.refserver.app",
    "pytest_diffperf.refserver.pipeline",
    "uvicorn",
    "uvicorn.lifespan.on",
    "uvicorn.loops.auto",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.websockets.auto",
    "diffusers.pipelines.flux.pipeline_flux",
    "imageio.v2",
)
DIFFUSERS = (
    "AutoencoderKL",
    "AutoencoderKLWan",
    "EulerDiscreteScheduler",
    "FlowMatchEulerDiscreteScheduler",
    "FluxKontextPipeline",
    "FluxPipeline",
    "FluxTransformer2DModel",
    "UNet2DConditionModel",
    "WanImageToVideoPipeline",
    "WanTransformer3DModel",
)
# Variables read when those libraries are imported or the interpreter starts: a serve that differs runs on its own.
# (LD_LIBRARY_PATH is not: it is read by each later dlopen, in the child too, and cv2 sets it when imported.)
IMPORT_ENV = ("PYTHON", "OMP_", "MKL_", "KMP_", "OPENBLAS", "TORCH", "PYTORCH", "HF_", "HUGGINGFACE", "TRANSFORMERS",
              "DIFFUSERS", "TOKENIZERS", "LD_PRELOAD")  # fmt: skip
# set in each child; sys.path compared (PYTHONSAFEPATH only shapes sys.path, as a pythonpath= side sets it)
PER_SERVER_ENV = ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "PYTHONSAFEPATH")
PACKAGE = Path(__file__).resolve().parents[1]
MESSAGE_BYTES = 1 << 20
STREAMS = (0, 1, 2)


def identity(env: Mapping[str, str]) -> dict[str, Any]:
    """What must agree in a ``serve`` and the fork server for the fork server's imports to be its own: the package
    by its content (a checkout of the same files elsewhere, a ``git=`` side's worktree, serves as it)."""
    return {
        "python": sys.executable,
        "package": package_digest(PACKAGE),
        "package_dir": str(PACKAGE),
        "path": list(sys.path),  # [0] is the working folder of ``python -m``
        "env": {k: v for k, v in sorted(env.items()) if k.startswith(IMPORT_ENV) and k not in PER_SERVER_ENV},
    }


def package_digest(folder: Path) -> str:
    """SHA-256 of every file of the package folder (its relative path and bytes), bytecode caches left out."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def difference(mine: Mapping[str, Any], theirs: Mapping[str, Any], loaded: Mapping[str, str] | None = None) -> str:
    """The first way ``theirs`` differs from ``mine`` in words ('' when they agree).

    ``theirs`` may have more ``sys.path`` entries (pytester's runs add their folder to ``PYTHONPATH``) as long as
    none has another file for a module of ``loaded`` (the top-level modules ``mine`` imported, and their files),
    the package aside: a copy of it with the same files (its digest) serves as the fork server's.
    """
    if mine["python"] != theirs.get("python"):
        return f"its python is {theirs.get('python')!r}, the fork server's {mine['python']!r}"
    if mine["package"] != theirs.get("package"):
        return (
            f"its package {theirs.get('package_dir')!r} has other files than the fork server's {mine['package_dir']!r}"
        )
    path, other_path = mine["path"][1:], list(theirs.get("path", []))
    if list(dict.fromkeys(entry for entry in other_path if entry in path)) != list(dict.fromkeys(path)):
        return f"its sys.path {other_path!r} does not hold the fork server's {path!r} in order"
    loaded = loaded or {}
    for entry in (entry for entry in other_path if entry not in path):
        shadowed = next(
            (name for name in sorted(loaded) if name != PACKAGE.name and _shadows(entry, name, loaded[name])), None
        )  # the package itself: the same files, compared above
        if shadowed:
            return f"its sys.path entry {entry!r} has {shadowed!r}, which the fork server imported from elsewhere"
    env, other = mine["env"], theirs.get("env", {})
    for name in sorted({*env, *other}):
        if env.get(name) != other.get(name):
            return f"its {name} is {other.get(name)!r}, the fork server's {env.get(name)!r}"
    return ""


def _shadows(entry: str, name: str, file: str) -> bool:
    """``entry`` has module ``name`` in another file than ``file``."""
    try:
        spec = importlib.machinery.PathFinder.find_spec(name, [entry])
    except (ImportError, ValueError, OSError):
        return False
    return spec is not None and (spec.origin is None or os.path.realpath(spec.origin) != os.path.realpath(file))


def loaded_modules() -> dict[str, str]:
    """The top-level modules this process imported from files, and their files."""
    return {
        name: str(module.__file__)
        for name, module in list(sys.modules.items())
        if "." not in name and getattr(module, "__file__", None)
    }


def _send(sock: socket.socket, message: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
    data = json.dumps(message).encode()
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


def _receive(sock: socket.socket) -> dict[str, Any] | None:
    data = sock.recv(MESSAGE_BYTES)
    return json.loads(data) if data else None


# -- the serve side ------------------------------------------------------------------------------------------------
def serve_forked(argv: list[str]) -> int | None:
    """Run ``serve argv`` as a child of the fork server the environment names; its exit code (negative: the signal
    that ended it), or None when there is none to use (no fork server named, unreachable, or refused)."""
    named = protocol.forkserver_in(os.environ)
    if named is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(named[1])
        request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(), "identity": identity(os.environ)}
        _send(sock, request, STREAMS)
        reply = _receive(sock) or {"refused": "it closed the connection"}
    except OSError as exc:
        reply = {"refused": f"cannot reach it: {exc.strerror or exc}"}
    if "pid" not in reply:
        sock.close()
        print(f"[refserver] not forked ({reply['refused']}): starting in this process", file=sys.stderr, flush=True)
        return None
    return _stand_in(sock, int(reply["pid"]))


def _stand_in(sock: socket.socket, pid: int) -> int:
    """Relay stop signals to the forked server ``pid`` until the fork server reports how it ended."""
    ended = False

    def relay(signum: int, _frame: object) -> None:
        if not ended:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, relay)
    try:
        report = _receive(sock)
    except OSError:
        report = None
    finally:
        sock.close()
    ended = True
    if report is None:
        print(f"[refserver] error: the fork server ended before server pid {pid}", file=sys.stderr, flush=True)
        return 1
    return int(report["exit"])


# -- the fork server -----------------------------------------------------------------------------------------------
def preload() -> None:
    """Import what a server imports, without running any torch operation (no thread pool before a fork)."""
    for name in PRELOAD:
        importlib.import_module(name)
    diffusers = importlib.import_module("diffusers")
    for name in DIFFUSERS:
        getattr(diffusers, name)


class ForkServer:
    """Accepts ``serve`` requests on ``path``, forks a child for each that runs ``serve(argv)`` (the command line's,
    not forking again), reports each child's end to its stand-in."""

    def __init__(self, path: str, serve: Callable[[list[str]], int]):
        self.path = path
        self.serve = serve
        self.pid = os.getpid()
        self.parent = os.getppid()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(path)
        self.listener.listen(64)
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self.children: dict[int, socket.socket | None] = {}  # pid -> its stand-in (None: the stand-in is gone)
        self.identity = identity(os.environ)
        self.loaded: dict[str, str] = {}  # the top-level modules it imported, and their files: set once they are

    def run(self) -> None:
        """Serve until SIGTERM, SIGINT or the parent's end; then kill every child."""
        stop = False

        def on_stop(_signum: int, _frame: object) -> None:
            nonlocal stop
            stop = True

        signal.signal(signal.SIGTERM, on_stop)
        signal.signal(signal.SIGINT, on_stop)
        signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
        signal.set_wakeup_fd(self.wake_w)
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        try:
            while not stop and os.getppid() == self.parent:
                for key, _ in self.selector.select(timeout=1.0):
                    if key.fileobj is self.listener:
                        self._accept()
                    elif key.fileobj == self.wake_r:
                        os.read(self.wake_r, 512)
                    else:
                        self._stand_in_gone(key.data)
                self._reap()
        finally:
            for pid in self.children:
                _kill(pid)
            with contextlib.suppress(OSError):
                os.unlink(self.path)

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        conn.settimeout(10)
        fds: list[int] = []
        try:
            data, fds, _, _ = socket.recv_fds(conn, MESSAGE_BYTES, len(STREAMS))
            request = json.loads(data)
            refused = (
                difference(self.identity, request["identity"], self.loaded)
                if len(fds) == len(STREAMS)
                else "no standard streams"
            )
            if refused:
                _send(conn, {"refused": refused})
                conn.close()
                return
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                self._child(request, fds, conn)
        except (OSError, ValueError, KeyError, TypeError):
            conn.close()
            return
        finally:
            for fd in fds:
                os.close(fd)
        conn.settimeout(None)
        self.children[pid] = conn
        self.selector.register(conn, selectors.EVENT_READ, pid)
        try:
            _send(conn, {"pid": pid})
        except OSError:
            self._drop(pid)

    def _child(self, request: dict[str, Any], fds: list[int], conn: socket.socket) -> NoReturn:
        code = 1
        try:
            conn.close()
            self._leave()
            os.setsid()
            die_with_parent(self.pid)
            for target, fd in zip(STREAMS, fds, strict=True):
                os.dup2(fd, target)
            for fd in fds:
                os.close(fd)
            for name, fd in (("stdout", 1), ("stderr", 2)):
                stream = open(fd, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
                setattr(sys, name, stream)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.path[:] = request["identity"]["path"]
            sys.argv = [sys.argv[0], *request["argv"]]
            sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
            code = self.serve(request["argv"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # noqa: BLE001 - a child must never return into the fork server's loop
            traceback.print_exc()
        finally:
            for out in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    out.flush()
            os._exit(code)

    def _leave(self) -> None:
        """In a child: drop the fork server's signal handlers, sockets and pipes."""
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        self.selector.close()
        self.listener.close()
        for conn in self.children.values():
            if conn is not None:
                conn.close()
        os.close(self.wake_r)
        os.close(self.wake_w)

    def _stand_in_gone(self, pid: int) -> None:
        conn = self.children.get(pid)
        if conn is None:
            return
        try:
            if conn.recv(MESSAGE_BYTES, socket.MSG_DONTWAIT):
                return  # a stand-in sends nothing after its request: ignored
        except BlockingIOError:
            return  # nothing to read: it is still there
        except OSError:
            pass  # reset: gone
        self._drop(pid)

    def _drop(self, pid: int) -> None:
        """The child ``pid`` has no stand-in any more: close the connection, kill the child."""
        conn = self.children.get(pid)
        if conn is None:
            return
        self.selector.unregister(conn)
        conn.close()
        self.children[pid] = None
        _kill(pid)

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError):
                    _send(conn, {"exit": os.waitstatus_to_exitcode(status)})
                self.selector.unregister(conn)
                conn.close()


def _kill(pid: int) -> None:
    """SIGKILL a child's session (its group: it called setsid), or the child itself should it not have yet."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def serve_forks(path: str, serve: Callable[[list[str]], int]) -> int:
    """``forkserver``: die with the parent, listen on ``path`` at once (a connection waits for the imports), import
    the server's libraries, then fork servers until stopped."""
    die_with_parent(os.getppid())
    server = ForkServer(path, serve)
    print(f"[refserver] fork server listening on {path} (pid {os.getpid()})", flush=True)
    preload()
    server.loaded = loaded_modules()
    print("[refserver] fork server ready", flush=True)
    server.run()
    return 0
