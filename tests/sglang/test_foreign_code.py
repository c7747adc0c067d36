"""SGLang's own code run by the plugin (case files, harness) is bounded: a time limit, no process left behind, and
one clear message when it raises (issue 40's SGLang-loading items)."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest

from pytest_diffperf import cli
from pytest_diffperf.sglang import guard
from pytest_diffperf.sglang.source import SERVER_DIR
from tests.support.sglang import SRC

pytestmark = pytest.mark.usefixtures("vendored")
AS_INSTALLED = {"import-cases": [], "verify-sglang": ["--openai-as-installed"]}  # the pin: test_verify_sglang.py
SLEEP_S = 30  # far over the limit the tests set: without one, the command would wait this long


def tree_with(tmp_path: Path, file: str, tail: str) -> Path:
    tree = tmp_path / "src"
    shutil.copytree(SRC / "sglang", tree / "sglang")
    path = tree / SERVER_DIR / file
    path.write_text(path.read_text() + "\n" + tail)
    return tree


def our_children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


# An alarm that lands in a weakref callback is ignored there (reported as unraisable) and comes again 0.5 s later.
@pytest.mark.server  # waits out its 5 s limit: out of the fast tests
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize(
    ("file", "command"), [("gpu_cases.py", "import-cases"), ("test_server_utils.py", "verify-sglang")]
)
def test_sglang_code_that_sleeps_at_import_is_stopped_at_the_limit(tmp_path, monkeypatch, capsys, file, command):
    tree = tree_with(tmp_path, file, f"import time\ntime.sleep({SLEEP_S})\n")
    # 5 s: on a loaded machine SGLang's other files can take over 1 s to import, and the limit then named them
    monkeypatch.setenv(guard.TIMEOUT_ENV, "5")
    assert cli.main([command, str(tree), *AS_INSTALLED[command]]) == 2
    err = capsys.readouterr().err
    assert f"{tree / SERVER_DIR / file}: SGLang's file {file} did not finish in 5 s" in err, err
    assert guard.TIMEOUT_ENV in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("file", "command"), [("gpu_cases.py", "import-cases"), ("test_server_common.py", "verify-sglang")]
)
def test_a_process_sglang_code_starts_is_not_left_running(tmp_path, capsys, file, command):
    before = our_children()
    tree = tree_with(tmp_path, file, f"import os\nos.spawnlp(os.P_NOWAIT, 'sleep', 'sleep', '{SLEEP_S}')\n")
    cli.main([command, str(tree), "--suite", "4-gpu-h100", *AS_INSTALLED[command]])
    capsys.readouterr()
    assert our_children() - before == set()


def test_a_bad_limit_is_one_error(monkeypatch, capsys):
    monkeypatch.setenv(guard.TIMEOUT_ENV, "soon")
    assert cli.main(["import-cases", str(SRC)]) == 2
    assert f"${guard.TIMEOUT_ENV}: expected a positive number of seconds, got 'soon'" in capsys.readouterr().err


@pytest.mark.server
def test_a_raising_diffusion_server_fixture_is_one_row_naming_what_raised(tmp_path, capsys):
    tree = tmp_path / "src"
    shutil.copytree(SRC / "sglang", tree / "sglang")
    common = tree / SERVER_DIR / "test_server_common.py"
    marker = "    server_args = case.server_args\n"
    text = common.read_text()
    assert text.count(marker) == 1
    common.write_text(text.replace(marker, marker + "    raise ValueError('no GPU here')\n"))
    assert cli.main(["verify-sglang", str(tree), "--suite", "1-gpu", "--openai-as-installed"]) == 1
    out, err = capsys.readouterr()
    rows = [line for line in out.splitlines() if line.startswith("qwen_image_t2i ")]  # its request is equal
    assert len(rows) == 1
    assert "SGLang error" in rows[0]
    assert f"SGLang's diffusion_server fixture raised ValueError: no GPU here at {common}:" in rows[0]
    assert "Traceback" not in out + err
