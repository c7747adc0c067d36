"""A/B runs: fresh base and candidate servers on the same devices, request pairs in a given order.

Each side has its own :class:`~.pool.ServerPool` (its own launcher when its SPEC names another
program). For every process pair both servers are started fresh; ``together`` keeps both running
and sends each request pair as ordered (``(base, candidate)`` or ``(candidate, base)``);
``one-at-a-time`` (one device cannot hold both) runs the first server's requests, stops it, then
the second's, and pairs the requests by index. Which server starts first is the caller's choice,
as is the order of the request pairs: :class:`pytest_diffperf.verdicts.design.ABDesign` decides
both, and :func:`pytest_diffperf.verdicts.abstats.run` drives :meth:`ABServers.measure_pair`.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..cases import Case
from ..errors import DiffperfError
from . import client
from .launchers import Launcher, ServerSpec
from .measure import Sample, measure_request, warm_up
from .pool import ServerPool
from .process import ServerProcess
from .sidespec import SideSpec

Side = Literal["base", "candidate"]
SIDES: tuple[Side, Side] = ("base", "candidate")
ServerMode = Literal["together", "one-at-a-time"]
SERVER_MODES: tuple[ServerMode, ...] = ("together", "one-at-a-time")


class ProgramLauncher(Launcher):
    """Another launcher with another server program (the base build's), everything else its own."""

    def __init__(self, inner: Launcher, program: Sequence[str]):
        self.inner = inner
        self.name = inner.name
        self.sglang_args = inner.sglang_args
        self.writes_perf_log = inner.writes_perf_log
        self._program = list(program)

    def program(self) -> list[str]:
        return list(self._program)

    def env(self, spec: ServerSpec, perf_dir: Path) -> dict[str, str]:
        return self.inner.env(spec, perf_dir)

    def request(self, base_url: str, case: Case, timeout: float) -> client.Output:
        return self.inner.request(base_url, case, timeout)

    def preview(self, case: Case) -> str:
        return self.inner.preview(case)


@dataclass(frozen=True)
class SideServer:
    """One side, resolved: its SPEC and the launcher that starts its servers."""

    side: Side
    spec: SideSpec
    launcher: Launcher
    commit: str | None = None  # the commit it serves, where known

    def server_spec(self, spec: ServerSpec) -> ServerSpec:
        """A case's server spec with this side's serve args and environment."""
        serve_args = " ".join(part for part in (spec.serve_args, shlex.join(self.spec.args)) if part)
        env = dict(spec.extra_env)
        env.update(self.spec.env)
        if self.spec.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (*self.spec.pythonpath, os.environ.get("PYTHONPATH")) if p)
            # ``python -m`` puts the working folder first, before PYTHONPATH: a checkout of the same package
            # there (the bundled suite's repository root) would shadow the side's (Python >= 3.11 obeys this)
            env["PYTHONSAFEPATH"] = "1"
        return replace(spec, serve_args=serve_args, extra_env=tuple(sorted(env.items())))


def resolve_side(side: Side, spec: SideSpec, launcher: Launcher, source: str, commit: str | None = None) -> SideServer:
    """The side's launcher; a ``DiffperfError`` when its program or a path does not exist. ``spec`` is
    served as it is: a ``git=`` side built first (:mod:`.gitside`)."""
    if spec.python is not None or spec.program:
        key = "python" if spec.python is not None else "program"
        if type(launcher).command is not Launcher.command:
            raise DiffperfError(
                f"launcher {launcher.name!r} builds its own command line, so {key}= cannot change its program",
                source=source,
                key=key,
            )
        program = list(spec.program) if spec.program else launcher.program_in(str(spec.python))
        if spec.python is not None and shutil.which(spec.python) is None:
            raise DiffperfError(f"{spec.python!r} is not an executable file", source=source, key=key)
        if shutil.which(program[0]) is None:
            raise DiffperfError(f"{program[0]!r} is not an executable file (nor found on PATH)", source=source, key=key)
        launcher = ProgramLauncher(launcher, program)
    for path in spec.pythonpath:
        if not Path(path).is_dir():
            raise DiffperfError(f"{path!r} is not a folder", source=source, key="pythonpath")
    return SideServer(side, spec, launcher, commit)


@dataclass(frozen=True)
class PairRun:
    """What one process pair measured: request pair ``j`` is ``(samples["base"][j], samples["candidate"][j])``."""

    index: int
    samples: Mapping[Side, Sequence[Sample]]
    load_ms: Mapping[Side, float | None]
    servers: Sequence[Mapping[str, Any]]  # each server's info, with its side, process pair and ready time


@dataclass
class ABServers:
    """Fresh server pairs for one case: both sides' pools, the case and how the servers share the devices."""

    sides: Mapping[Side, SideServer]
    pools: Mapping[Side, ServerPool]
    case: Case
    spec: ServerSpec  # the case's server, before either side's changes
    timeout: float
    mode: ServerMode = "together"
    started: list[Mapping[str, Any]] = field(default_factory=list)

    def measure_pair(self, index: int, orders: Sequence[tuple[Side, Side]], start_order: tuple[Side, Side]) -> PairRun:
        """Start process pair ``index`` (``start_order[0]`` first), send its request pairs, stop it."""
        samples: dict[Side, list[Sample]] = {side: [] for side in SIDES}
        load_ms: dict[Side, float | None] = {}
        infos: list[Mapping[str, Any]] = []
        try:
            if self.mode == "together":
                servers = {side: self._fresh(side, index, load_ms, infos) for side in start_order}
                for j, order in enumerate(orders):
                    for side in order:
                        samples[side].append(self._request(servers[side], side, j))
            else:
                for side in start_order:
                    server = self._fresh(side, index, load_ms, infos)
                    samples[side] = [self._request(server, side, j) for j in range(len(orders))]
                    self.pools[side].release()
        finally:
            self.close()
        return PairRun(index, samples, load_ms, infos)

    def _fresh(
        self, side: Side, index: int, load_ms: dict[Side, float | None], infos: list[Mapping[str, Any]]
    ) -> ServerProcess:
        pool = self.pools[side]
        pool.release()
        pool.label = f"{side} server of process pair {index + 1}"
        server = pool.get(self.sides[side].server_spec(self.spec))
        info = {"side": side, "process_pair": index, "ready_s": server.ready_s, **server.info()}
        infos.append(info)
        self.started.append(info)
        load_ms[side] = server.load_ms
        warm_up(server, self.sides[side].launcher, self.case, self.timeout)
        return server

    def _request(self, server: ServerProcess, side: Side, index: int) -> Sample:
        return measure_request(server, self.sides[side].launcher, self.case, self.timeout, index)

    def close(self) -> None:
        """Stop both sides' servers."""
        for pool in self.pools.values():
            pool.release()
