"""Launchers: how to start one kind of server and talk to it.

A launcher is a command builder plus a request adapter. ``sglang`` and ``reference`` (the bundled
CPU server) share SGLang's command line and HTTP API; other frameworks subclass ``Launcher`` and
call ``register_launcher``, or are declared in the ``pytest_diffperf.launchers`` entry-point group
(see docs/compare.md).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from .. import protocol
from ..cases import Case
from ..errors import DiffperfError
from . import client
from .process import ServerPorts

STRICT_PORTS = "--strict-ports"
ACCESS_LOG_EXCLUDE = "--uvicorn-access-log-exclude-prefixes"
OUTPUT_PATH = "--output-path"


@dataclass(frozen=True)
class ServerSpec:
    """Everything that decides which server process a case needs; equal specs share a server."""

    launcher: str
    model: str
    serve_args: str
    extra_env: tuple[tuple[str, str], ...]
    num_gpus: int
    exclude_health_access_log: bool = True  # SGLang's ServerManager adds it from 0.5.18 on

    @classmethod
    def for_case(cls, case: Case, launcher: str) -> ServerSpec:
        entry = case.framework(launcher)
        env = tuple(sorted(entry.extra_env.items()))
        model = model_path(case.model, f"case {case.id}")
        return cls(launcher, model, entry.serve_args, env, case.num_gpus, entry.exclude_health_access_log)

    @property
    def key(self) -> str:
        """A short id without spaces (an xdist group name): launcher, model, GPUs, and a hash of the rest."""
        key = f"{self.launcher}:{self.model}:{self.num_gpus}gpu"
        if self.serve_args or self.extra_env:
            key += ":" + hashlib.sha256(repr((self.serve_args, self.extra_env)).encode()).hexdigest()[:8]
        return key


def search_path(path: str) -> str:
    """``path`` (a ``PATH``) with the running Python's scripts folder after its own entries, unless it holds it."""
    scripts = str(Path(sys.executable).parent)
    return path if scripts in path.split(os.pathsep) else os.pathsep.join(p for p in (path, scripts) if p)


def model_path(model: str, where: str) -> str:
    """A case's model with ``$VAR``, ``${VAR}`` and ``~`` expanded (a folder written on this machine, as the bundled
    real-server cases name ``${DIFFPERF_MODELS}/tiny-FLUX.1-dev``); a variable left unset is an error."""
    expanded = os.path.expanduser(os.path.expandvars(model))
    unset = re.search(r"\$\{?(\w+)", expanded)
    if unset:
        raise DiffperfError(
            f"{model!r} names the environment variable {unset[1]}, which is not set; set it to the folder that "
            "holds the model (for the bundled real-server cases: bash scripts/sglang_cpu/setup.sh VENV prints it)",
            source=where,
            key="model",
        )
    return expanded


def group_key(cases: Mapping[str, Case], launcher: str) -> Callable[[str], str]:
    """A scenario's server group: the key of its ``ServerSpec``, or its own id when it has no case."""
    return lambda sid: ServerSpec.for_case(cases[sid], launcher).key if sid in cases else sid


class Launcher:
    """SGLang's ``sglang serve`` command line and OpenAI-style HTTP API.

    A subclass overrides ``command(spec, port)`` (and ``server_command``, which the pool calls, when it
    needs more ports than the HTTP one), ``env`` and ``request``.
    """

    name = "sglang"
    sglang_args = True  # takes SGLang's serve args: a case's "sglang" entry serves it when it has none of its own
    writes_perf_log = True  # the server writes SGLang's performance.log to $SGLANG_PERF_LOG_DIR
    writes_outputs = True  # the server writes each output to --output-path (SGLang's default: ./outputs/)

    def program(self) -> list[str]:
        return ["sglang"]

    def missing_program(self) -> str | None:
        """What to do when this launcher's program is not installed here (None when it is): its name, and how to
        install it or choose another launcher."""
        first = self.program()[0]
        if shutil.which(first, path=search_path(os.environ.get("PATH", ""))) is not None:
            return None
        how = "install SGLang (pip install sglang)" if self.name == "sglang" else f"install {first!r}"
        return (
            f"{first!r} is not installed here (not on PATH) for launcher {self.name!r} (--diffperf-server): {how}, "
            "or pass --diffperf-server=reference for the bundled CPU reference server"
        )

    def program_in(self, python: str) -> list[str]:
        """The program as another Python environment installs it (``--diffperf-base python=...``):
        its console script next to that interpreter."""
        first, *rest = self.program()
        return [str(Path(python).parent / first), *rest]

    def command(self, spec: ServerSpec, port: int) -> list[str]:
        """SGLang's test command (``test_server_common.py``'s fixture and ``ServerManager``), flag for flag.

        ``--strict-ports`` goes at the end of the serve args unless they hold it (a case converted from
        SGLang's lists carries it where SGLang puts it); the ``/health`` access-log exclusion is added
        unless the serve args set that flag or the case comes from a release before 0.5.18.
        """
        args = shlex.split(os.path.expandvars(spec.serve_args))
        command = [
            *self.program(), "serve",
            "--model-path", spec.model,
            "--port", str(port),
            "--log-level=debug",
            "--model-type", "diffusion",
            "--num-gpus", str(spec.num_gpus),
            *args,
        ]  # fmt: skip
        if STRICT_PORTS not in args:
            command.append(STRICT_PORTS)
        if spec.exclude_health_access_log and not any(arg.startswith(ACCESS_LOG_EXCLUDE) for arg in args):
            command += [ACCESS_LOG_EXCLUDE, protocol.HEALTH_PATH]
        return command

    def server_command(self, spec: ServerSpec, ports: ServerPorts) -> list[str]:
        """The command the pool starts: ``command``, plus, for SGLang's command line, its scheduler and master
        ports (``--strict-ports`` needs them free; the defaults 5555 and 30005 collide between concurrent servers).

        A launcher with its own ``command`` gets just that.
        """
        command = self.command(spec, ports.http)
        if type(self).command is Launcher.command:
            command += ["--scheduler-port", str(ports.scheduler), "--master-port", str(ports.master)]
        return command

    def output_args(self, spec: ServerSpec, folder: Path) -> list[str]:
        """Flags that keep what the server writes inside ``folder`` (the server's own log folder), where it would
        write elsewhere by default: ``sglang serve`` writes every output into ``./outputs/`` of its working
        directory (``--output-path``'s default), so it gets ``--output-path FOLDER/outputs`` unless the serve args
        set it. The pool adds these to ``server_command``; a launcher whose server writes nothing, or with a
        command line of its own, gets []."""
        if not self.writes_outputs or type(self).command is not Launcher.command:  # not SGLang's command line
            return []
        args = shlex.split(os.path.expandvars(spec.serve_args))
        if any(a == OUTPUT_PATH or a.startswith(f"{OUTPUT_PATH}=") for a in args):
            return []
        return [OUTPUT_PATH, str(folder / "outputs")]

    def env(self, spec: ServerSpec, perf_dir: Path) -> dict[str, str]:
        """The case's ``extra_env``, SGLang's stage-logging and perf-log variables, and, when pytest runs from a
        venv that is not on ``PATH`` (``VENV/bin/python -m pytest``), that venv's scripts after ``PATH``'s own: the
        ``sglang`` installed beside the running pytest is found, one on ``PATH`` still wins."""
        env = {k: os.path.expandvars(v) for k, v in spec.extra_env}
        env[protocol.STAGE_LOGGING_ENV] = "1"
        env[protocol.PERF_LOG_DIR_ENV] = str(perf_dir)
        path = env.get("PATH", os.environ.get("PATH", ""))
        searched = search_path(path)
        if searched != path:
            env["PATH"] = searched
        return env

    def request(self, base_url: str, case: Case, timeout: float) -> client.Output:
        """Send one generation request for ``case``; returns the response id and the media."""
        return client.generate(base_url, case, timeout)

    def preview(self, case: Case) -> str:
        """What ``request`` sends for ``case``, as one line of text (for the dry runs)."""
        return client.describe_request(case)


class ReferenceLauncher(Launcher):
    """The bundled CPU reference server, started with the same flags as ``sglang serve``."""

    name = "reference"
    writes_outputs = False  # keeps outputs in memory unless given --output-path

    def program(self) -> list[str]:
        return [sys.executable, "-m", "pytest_diffperf.refserver"]

    def program_in(self, python: str) -> list[str]:
        return [python, "-m", "pytest_diffperf.refserver"]


LAUNCHERS: dict[str, Launcher] = {}
ENTRY_POINT_GROUP = "pytest_diffperf.launchers"


def register_launcher(launcher: Launcher) -> None:
    LAUNCHERS[launcher.name] = launcher


def get_launcher(name: str) -> Launcher:
    """A registered launcher, else the one an installed package declares under ``name`` in the entry-point group."""
    if name not in LAUNCHERS:
        for entry in metadata.entry_points(group=ENTRY_POINT_GROUP, name=name):
            register_launcher(_load(entry))
    try:
        return LAUNCHERS[name]
    except KeyError:
        known = sorted({*LAUNCHERS, *metadata.entry_points(group=ENTRY_POINT_GROUP).names})
        raise DiffperfError(f"unknown launcher {name!r}; known: {', '.join(known)}") from None


def _load(entry: metadata.EntryPoint) -> Launcher:
    """The launcher of an entry point (a ``Launcher`` subclass or instance named like the entry point)."""
    where = f"entry point {entry.name} = {entry.value} ({ENTRY_POINT_GROUP})"
    try:
        found = entry.load()
    except Exception as exc:  # noqa: BLE001 (any import-time failure of a third-party module)
        raise DiffperfError(f"cannot load: {type(exc).__name__}: {exc}", source=where) from None
    launcher = found() if isinstance(found, type) and issubclass(found, Launcher) else found
    if not isinstance(launcher, Launcher):
        raise DiffperfError(f"expected a Launcher subclass or instance, got {found!r}", source=where)
    if launcher.name != entry.name:
        raise DiffperfError(f"the launcher is named {launcher.name!r}, the entry point {entry.name!r}", source=where)
    return launcher


register_launcher(Launcher())
register_launcher(ReferenceLauncher())
