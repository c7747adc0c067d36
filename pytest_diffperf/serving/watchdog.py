"""A server's parent process that kills the server's whole tree when the processes it watches die.

``python -m pytest_diffperf.serving.watchdog --watch PID [--watch PID ...] -- COMMAND ...`` runs
COMMAND as its child, in its own process group (the watchdog leads it: it is started in a new
session), and polls the watched processes (default: its parent). When one of them disappears, or it
is sent SIGTERM, SIGHUP or SIGINT, it terminates every process it started (the group, every
descendant: on Linux orphaned grandchildren are reparented to it as a child subreaper), waits
``GRACE_S``, then kills what is left, and exits. When COMMAND ends on its own, the watchdog ends the
same way (its exit code, or the same signal), so its parent sees what the server did.

It works for any launcher's command (the reference server, ``sglang serve``): nothing has to run in
a pytest that was SIGKILLed for its servers to go.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

import psutil

from .._util.lifecycle import become_subreaper, exit_as

POLL_S = 0.2
CANNOT_START = "diffperf watchdog: cannot start"  # its log line when the server's program is not there
GRACE_S = 3.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
STOPPED_CODE = 128 + signal.SIGTERM  # stopped (signalled, or a watched process died)


def wrap(command: Sequence[str], watch: Sequence[int]) -> list[str]:
    """``command`` run under a watchdog of the processes ``watch`` (pids)."""
    flags = [arg for pid in watch for arg in ("--watch", str(pid))]
    return [sys.executable, "-m", __name__.replace(".__main__", ""), *flags, "--", *command]


class _Stop(Exception):
    """A stop signal arrived."""


def _on_signal(signum: int, _frame: object) -> None:
    raise _Stop(signum)


def _watched(pids: Sequence[int]) -> list[psutil.Process]:
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))  # remembers the start time: a reused pid is not mistaken for it
        except psutil.NoSuchProcess:
            return []  # already gone: the caller is dead
    return procs


def _alive(procs: Sequence[psutil.Process], parent: int) -> bool:
    if os.getppid() != parent:
        return False
    for proc in procs:
        try:
            if not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            return False
    return True


def _running(proc: psutil.Process) -> bool:
    try:
        return bool(proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def kill_group(child: subprocess.Popen[bytes], grace: float = GRACE_S) -> None:
    """SIGTERM the child, its process group and every descendant; SIGKILL what is left after ``grace``."""
    me = psutil.Process()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        procs = [p for p in me.children(recursive=True) if _running(p)]
        if not procs and child.poll() is not None:
            break
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(sig)
        with contextlib.suppress(OSError):
            os.killpg(child.pid, sig)  # the group, should a descendant have left the tree
        _, alive = psutil.wait_procs(procs, timeout=grace)
        if not alive:
            break
    with contextlib.suppress(OSError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:  # reap reparented orphans
            pass
    child.poll()


def run(command: Sequence[str], watch: Sequence[int]) -> int | None:
    """Run ``command`` until it ends (its return code), a watched process dies or a stop signal comes (None);
    then no process it started is left."""
    parent = os.getppid()
    procs = _watched(watch)
    for sig in STOP_SIGNALS:
        signal.signal(sig, _on_signal)
    become_subreaper()
    child: subprocess.Popen[bytes] | None = None
    try:
        if len(procs) < len(watch):
            return None
        child = subprocess.Popen(list(command), start_new_session=True)  # its own group, which can be killed whole
        while child.poll() is None:
            if not _alive(procs, parent):
                return None
            time.sleep(POLL_S)
        return child.returncode
    except _Stop:
        return None
    except OSError as exc:
        sys.stderr.write(f"{CANNOT_START} {command[0]!r}: {exc.strerror}\n")
        return 127
    finally:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        if child is not None:
            kill_group(child)  # the server, or what it left behind


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pytest_diffperf.serving.watchdog", description=__doc__)
    parser.add_argument("--watch", type=int, action="append", default=[], help="a process to outlive (default: parent)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (after --)")
    code = run(command, args.watch or [os.getppid()])
    if code is None:
        sys.exit(STOPPED_CODE)
    exit_as(code)  # killed by a signal: end the same way, so that the parent sees which


if __name__ == "__main__":
    main()
