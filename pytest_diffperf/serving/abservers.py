"""A/B runs: fresh base and candidate servers on the same devices, request pairs in a given order.

Each side has its own :class:`~.pool.ServerPool` per slot (its own launcher when its SPEC names
another program). For every process pair both servers are started fresh and serve the cases
given, one after another (a server group's scenarios share the pair); ``together`` starts both at
once, keeps both running and sends each request pair as ordered (``(base, candidate)`` or
``(candidate, base)``); ``one-at-a-time`` (one device cannot hold both) runs the first server's
requests, stops it, then the second's, and pairs the requests by index. :meth:`ABServers.spawn`
begins a later pair's starts (in another slot) before an earlier pair measures. Which server
starts first, the order of the request pairs and when to start ahead are the caller's:
:class:`pytest_diffperf.verdicts.design.ABDesign` decides the first two, and
:class:`pytest_diffperf.judging.abscenario.GroupAB` drives :meth:`ABServers.measure_pair`.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from ..cases import Case
from ..errors import DiffperfError
from ..verdicts.vocab import SIDES, Order, Side
from . import client
from .launchers import Launcher, ServerSpec
from .measure import Sample, measure_request, warm_up
from .pool import ServerPool
from .process import ServerProcess
from .record import ServerRecord
from .sidespec import SideSpec

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
    """What one process pair measured of one case: request pair ``j`` is ``(samples["base"][j], samples["candidate"][j])``."""

    index: int
    samples: Mapping[Side, Sequence[Sample]]
    load_ms: Mapping[Side, float | None]
    servers: Sequence[ServerRecord]  # each server's record, with its side, process pair and ready time


@dataclass(frozen=True)
class PairWork:
    """What a process pair measures of one case: its warmups, then its request pairs in ``orders``."""

    case: Case
    orders: Sequence[Order]
    timeout: float


@dataclass
class ABServers:
    """The process pairs of one server group: both sides' pools (one per slot: process pair ``i`` runs in slot
    ``i % slots``), the group's server spec and how a pair's servers share the devices."""

    sides: Mapping[Side, SideServer]
    pools: Sequence[Mapping[Side, ServerPool]]
    spec: ServerSpec  # the group's server, before either side's changes
    mode: ServerMode = "together"
    progress: Callable[[str], None] = lambda _msg: None
    _spawned: set[int] = field(default_factory=set)

    @property
    def slots(self) -> int:
        return len(self.pools)

    def spawn(self, index: int, start_order: Order) -> None:
        """Begin starting both servers of process pair ``index`` (``start_order[0]`` first) in its slot, without
        waiting for them (``together`` only: one at a time, a pair's servers never run at once)."""
        if self.mode != "together" or index in self._spawned:
            return
        self._spawned.add(index)
        for side in start_order:
            pool = self._pool(index, side)
            pool.label = f"{side} server of process pair {index + 1}"
            pool.spawn(self.sides[side].server_spec(self.spec))

    def wait(self, index: int) -> None:
        """Wait until the servers :meth:`spawn` began for process pair ``index`` are ready (a failure: raised)."""
        if index in self._spawned:
            for side in SIDES:
                self._pool(index, side).get(self.sides[side].server_spec(self.spec))

    def measure_pair(self, index: int, work: Sequence[PairWork], start_order: Order) -> list[PairRun]:
        """Process pair ``index`` (started now unless :meth:`spawn` began it): each case's warmups and request
        pairs in turn, on the same two servers; then stop it. One run per case, in ``work``'s order."""
        samples: list[dict[Side, list[Sample]]] = [{side: [] for side in SIDES} for _ in work]
        load_ms: dict[Side, float | None] = {}
        infos: list[ServerRecord] = []
        cases = ", ".join(w.case.id for w in work)
        try:
            if self.mode == "together":
                self.spawn(index, start_order)
                servers = {side: self._ready(side, index, load_ms, infos) for side in start_order}
                self.progress(f"diffperf: measuring process pair {index + 1}: {cases}")
                for w, got in zip(work, samples, strict=True):
                    for side in start_order:
                        warm_up(servers[side], self.sides[side].launcher, w.case, w.timeout)
                    for j, order in enumerate(w.orders):
                        for side in order:
                            got[side].append(self._request(servers[side], side, w, j))
            else:
                for side in start_order:
                    server = self._ready(side, index, load_ms, infos)
                    self.progress(f"diffperf: measuring the {side} server of process pair {index + 1}: {cases}")
                    for w, got in zip(work, samples, strict=True):
                        warm_up(server, self.sides[side].launcher, w.case, w.timeout)
                        got[side] = [self._request(server, side, w, j) for j in range(len(w.orders))]
                    self._pool(index, side).release()
        finally:
            self.stop(index)
        return [PairRun(index, got, load_ms, infos) for got in samples]

    def _pool(self, index: int, side: Side) -> ServerPool:
        return self.pools[index % self.slots][side]

    def _ready(
        self, side: Side, index: int, load_ms: dict[Side, float | None], infos: list[ServerRecord]
    ) -> ServerProcess:
        """The side's server of pair ``index``: the start :meth:`spawn` began, waited for; else started now."""
        pool = self._pool(index, side)
        spec = self.sides[side].server_spec(self.spec)
        if self.mode != "together":
            pool.release()  # one at a time: a fresh server per side
            pool.label = f"{side} server of process pair {index + 1}"
        server = pool.get(spec)
        infos.append(server.record((side, index)))
        load_ms[side] = server.load_ms
        return server

    def _request(self, server: ServerProcess, side: Side, work: PairWork, index: int) -> Sample:
        return measure_request(server, self.sides[side].launcher, work.case, work.timeout, index)

    def stop(self, index: int) -> None:
        """Stop process pair ``index``'s servers."""
        self._spawned.discard(index)
        for pool in self.pools[index % self.slots].values():
            pool.release()

    def close(self) -> None:
        """Stop every server of every slot (a pair started ahead and not needed included)."""
        self._spawned.clear()
        for slot in self.pools:
            for pool in slot.values():
                pool.release()
