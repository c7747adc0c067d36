"""One side of an A/B run: its launcher, command line and environment, from its SPEC."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.serving.abservers import ProgramLauncher, resolve_side
from pytest_diffperf.serving.launchers import Launcher, ReferenceLauncher, ServerSpec
from pytest_diffperf.serving.process import ServerPorts
from pytest_diffperf.serving.sidespec import parse_side_spec

SPEC = ServerSpec("reference", "tiny/flux-t2i", "--warmup-mode server", (("A", "1"),), 1)
PORTS = ServerPorts(31000, 31002, 31003)


def side(text: str, launcher: Launcher | None = None):
    return resolve_side(
        "base", parse_side_spec(text, "--diffperf-base"), launcher or ReferenceLauncher(), "--diffperf-base"
    )


def test_current_keeps_the_launcher_and_the_spec():
    s = side("current")
    assert isinstance(s.launcher, ReferenceLauncher)
    assert s.server_spec(SPEC) == SPEC


def test_args_env_and_pythonpath_change_the_servers_spec(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/already")
    s = side(f"args=--inject-delay DenoisingStage=50; env=B=2; env=A=9; pythonpath={tmp_path}")
    spec = s.server_spec(SPEC)
    assert spec.serve_args == "--warmup-mode server --inject-delay DenoisingStage=50"
    assert dict(spec.extra_env) == {
        "A": "9", "B": "2", "PYTHONPATH": f"{tmp_path}{os.pathsep}/already", "PYTHONSAFEPATH": "1"
    }  # fmt: skip
    assert spec.key != SPEC.key  # a server of its own, never shared with the other side's
    command = s.launcher.server_command(spec, PORTS)
    assert command[:3] == [sys.executable, "-m", "pytest_diffperf.refserver"]
    at = command.index("--warmup-mode")
    assert command[at : at + 4] == ["--warmup-mode", "server", "--inject-delay", "DenoisingStage=50"]


def test_python_runs_the_reference_server_in_that_environment():
    s = side(f"python={sys.executable}")
    assert isinstance(s.launcher, ProgramLauncher)
    command = s.launcher.server_command(SPEC, PORTS)
    assert command[:3] == [sys.executable, "-m", "pytest_diffperf.refserver"]
    assert command[3:5] == ["serve", "--model-path"]
    assert command[-4:] == ["--scheduler-port", "31002", "--master-port", "31003"]  # as for the plain launcher
    assert s.launcher.env(SPEC, Path("/perf")) == ReferenceLauncher().env(SPEC, Path("/perf"))


def test_python_runs_sglangs_console_script_next_to_it(tmp_path):
    python, script = tmp_path / "bin" / "python", tmp_path / "bin" / "sglang"
    python.parent.mkdir()
    for exe in (python, script):
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    s = side(f"python={python}", Launcher())
    assert s.launcher.server_command(SPEC, PORTS)[:2] == [str(script), "serve"]


def test_program_replaces_the_program():
    s = side(f"program={sys.executable} -m pytest_diffperf.refserver")
    assert s.launcher.command(SPEC, 31000)[:4] == [sys.executable, "-m", "pytest_diffperf.refserver", "serve"]


class OwnCommand(Launcher):
    name = "own"

    def command(self, spec: ServerSpec, port: int) -> list[str]:
        return ["own-server", str(port)]


@pytest.mark.parametrize(
    ("text", "launcher", "message", "key"),
    [
        ("python=/no/such/python", None, "'/no/such/python' is not an executable file", "python"),
        (
            "program=no-such-program-here --x",
            None,
            "'no-such-program-here' is not an executable file (nor found on PATH)",
            "program",
        ),
        ("pythonpath=/no/such/folder", None, "'/no/such/folder' is not a folder", "pythonpath"),
        (
            f"python={sys.executable}",
            OwnCommand(),
            "launcher 'own' builds its own command line, so python= cannot",
            "python",
        ),
    ],
)
def test_errors(text, launcher, message, key):
    with pytest.raises(DiffperfError) as info:
        side(text, launcher)
    assert message in str(info.value)
    assert (info.value.source, info.value.key) == ("--diffperf-base", key)


def test_a_base_python_without_sglang_next_to_it(tmp_path):
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    with pytest.raises(DiffperfError, match=r"sglang' is not an executable file \(nor found on PATH\)"):
        side(f"python={python}", Launcher())
