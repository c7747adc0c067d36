"""SGLang's real diffusion server (``sglang serve``) on this CPU, for the ``sglang_server`` tests.

They run where SGLang's CPU path is installed (``bash scripts/sglang_cpu/setup.sh VENV``, then
``VENV/bin/python -m pytest tests -m sglang_server``) and skip elsewhere. The model folder is
``$DIFFPERF_MODELS/tiny-FLUX.1-dev`` when the setup wrote it, else written by ``export`` (13 s).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pytest_diffperf.refserver.export import export, exported
from tests.support.paths import REPO

CASES = REPO / "data/sglang_cpu/cases.json"
BASELINES = REPO / "data/sglang_cpu/perf_baselines/cpu.json"
NOISE = REPO / "data/sglang_cpu/noise.json"  # this server class's A/B priors (diffperf calibrate; docs/sglang.md)
SCENARIO = "sglang_cpu_flux_tiny_t2i"
MODEL = "tiny/flux-t2i"
MODELS_ENV = "DIFFPERF_MODELS"
SLEEP_ENV = "DIFFPERF_TEST_DENOISE_SLEEP_S"  # the patched package's sleep in DenoisingStage.forward, in seconds
CANDIDATE_SLEEP_S = 0.4  # its default: about +40 % of a 1 s request, a regression no noise hides
# The line of SGLang 0.5.23's DenoisingStage.forward that the candidate's copy sleeps before
DENOISE_CALL = (
    "        with self._offload_for_torch_compile_warmup(batch):\n            return self._denoise(batch, server_args)"
)
RUN_TIMEOUT_S = 1500

requires_sglang = pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None or shutil.which("sglang", path=os.path.dirname(sys.executable)) is None,
    reason="SGLang's CPU path is not installed here (bash scripts/sglang_cpu/setup.sh VENV)",
)


def models_dir(make: pytest.TempPathFactory) -> Path:
    """A folder holding the tiny Flux folder SGLang loads: the setup's, else one written now."""
    given = os.environ.get(MODELS_ENV)
    if given and exported(Path(given), MODEL):
        return Path(given)
    root = make.mktemp("models")
    export(MODEL, root)
    return root


def run_pytest(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``cwd``, as a user of the bundled real-server cases runs it, with ``cwd/tmp`` as
    its temp folder: SGLang's server leaves files in its own (IPC names, Hugging Face's config locks)."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(cwd), *args]
    (cwd / "tmp").mkdir(exist_ok=True)
    environ = {**os.environ, "TMPDIR": str(cwd / "tmp"), **(env or {})}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=environ)


def bundled_args(baselines: Path, *extra: str, cases: Path = CASES) -> list[str]:
    return [
        "--diffperf=pr_test",
        "--diffperf-server=sglang",
        "--diffperf-hardware=cpu",
        f"--diffperf-cases={cases}",
        f"--diffperf-baselines={baselines}",
        *extra,
    ]


def candidate_package(root: Path) -> Path:
    """A copy of the installed ``sglang`` package under ``root`` whose ``DenoisingStage.forward`` sleeps
    ``$DIFFPERF_TEST_DENOISE_SLEEP_S`` seconds (default ``CANDIDATE_SLEEP_S``): a real code change in SGLang,
    served with ``PYTHONPATH=root`` (``--diffperf-candidate=pythonpath=root``). Files are hard links where they can
    be (the package is 220 MB); the one changed file is written anew."""
    spec = importlib.util.find_spec("sglang")
    assert spec is not None and spec.origin is not None
    installed = Path(spec.origin).parent
    copy = root / "sglang"
    try:
        shutil.copytree(installed, copy, copy_function=os.link, ignore=shutil.ignore_patterns("__pycache__"))
    except OSError:
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(installed, copy, ignore=shutil.ignore_patterns("__pycache__"))
    stage = copy / "multimodal_gen/runtime/pipelines_core/stages/denoising.py"
    source = stage.read_text()
    assert DENOISE_CALL in source, f"{stage}: DenoisingStage.forward is not SGLang 0.5.23's; update DENOISE_CALL"
    sleep = (
        f'        __import__("time").sleep(float(__import__("os").environ.get("{SLEEP_ENV}", "{CANDIDATE_SLEEP_S}")))\n'
    )
    stage.unlink()  # a hard link: the installed file must stay as it is
    stage.write_text(source.replace(DENOISE_CALL, sleep + DENOISE_CALL))
    return root


def case_file(path: Path, *, serve_args: str | None = None, env: dict[str, str] | None = None) -> Path:
    """The bundled real-server case file with its sglang entry's serve args replaced and variables added."""
    doc = json.loads(CASES.read_text())
    entry = doc["cases"][0]["frameworks"]["sglang"]
    if serve_args is not None:
        entry["serve_args"] = serve_args
    entry["extra_env"] = {**entry["extra_env"], **(env or {})}
    path.write_text(json.dumps(doc, indent=2))
    return path


def ports_of(command: str) -> list[int]:
    """Every port a ``sglang serve`` command binds by number: HTTP, the broker (HTTP + 1), scheduler and master."""
    found = {flag: int(port) for flag, port in re.findall(r"--(port|scheduler-port|master-port)[ =](\d+)", command)}
    return [found["port"], found["port"] + 1, found["scheduler-port"], found["master-port"]]


def listening(ports: list[int]) -> list[int]:
    """The ``ports`` some process listens on, on any address."""
    held = {c.laddr.port for c in psutil.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}
    return sorted(held.intersection(ports))


@contextlib.contextmanager
def killed_at_exit(procs: list[psutil.Process]) -> Iterator[None]:
    """SIGKILL whatever of ``procs`` (and below them) still runs when the block ends: a test's own cleanup."""
    try:
        yield
    finally:
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                for child in proc.children(recursive=True):
                    child.kill()
                proc.kill()
