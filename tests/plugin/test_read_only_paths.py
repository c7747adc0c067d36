"""Read-only and unreadable paths, tried for real although the tests run as root.

Root reads and writes whatever the permission bits say, so each case runs as a real process that cannot: as root
without the capabilities that override file modes (``setpriv --bounding-set``), or as itself when it is not root.
An unreadable input and every output path the commands write (results, baselines through ``--regen-baselines`` and
``accept``, ground truth, server logs) are each one clear message naming the path, with nothing changed on disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugin import test_malformed_inputs as inputs
from tests.plugin import test_malformed_newer as newer
from tests.plugin.test_malformed_inputs import CONSISTENCY, Bad, D, P, Ran, check, snapshot
from tests.support.paths import REPO

pytestmark = pytest.mark.server  # every case a real pytest process, about 100 CPU-s in all

NO_DAC = ("--bounding-set=-dac_override,-dac_read_search",)  # root, held to the permission bits
BASELINES = json.dumps(inputs.base_files()["baselines.json"])
RO = {"ro": 0o555}

OUTPUTS = [
    P("ro-results-folder", "--diffperf-json=ro/r.json", expect=("--diffperf-json", "ro/r.json", "not writable"),
      raw={"ro/.keep": ""}, modes=RO),
    P("ro-results-file", "--diffperf-json=r.json", expect=("--diffperf-json", "r.json", "cannot write", "permission denied"),
      raw={"r.json": "{}"}, modes={"r.json": 0o444}),
    P("ro-log-dir", "--diffperf-log-dir=ro/logs", expect=("--diffperf-log-dir", "ro/logs"),
      raw={"ro/.keep": ""}, modes=RO),
    P("ro-regen-baselines-folder", "--regen-baselines", "--diffperf-baselines=ro/baselines.json",
      expect=("ro/baselines.json", "not writable"), raw={"ro/baselines.json": BASELINES}, modes=RO),
    P("ro-regen-baselines-file", "--regen-baselines", expect=("baselines.json", "not writable"),
      modes={"baselines.json": 0o444}),
    P("ro-regen-ground-truth", "--regen-ground-truth", *CONSISTENCY[1:], "--diffperf-gt-dir=ro/gt",
      expect=("--diffperf-gt-dir", "ro/gt"), raw={"ro/gt/.keep": ""}, modes={"ro/gt": 0o555, "ro": 0o555}),
    D("ro-accept-baselines-folder", "accept", newer.RUN, "--baselines=ro/baselines.json",
      expect=("ro/baselines.json", "not writable"), raw={"ro/baselines.json": BASELINES}, modes=RO),
    D("ro-accept-baselines-file", *newer.ACCEPT, expect=("baselines.json", "not writable"),
      modes={"baselines.json": 0o444}),
]  # fmt: skip
UNREADABLE = [bad for bad in [*inputs.CASES, *newer.CASES] if bad.modes]
CASES = OUTPUTS + UNREADABLE


def unprivileged() -> tuple[str, ...]:
    """The command prefix that holds a process to the permission bits (skip where none can)."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root, and no setpriv to drop the capabilities that override file modes")
    probe = subprocess.run([setpriv, *NO_DAC, "--", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"setpriv cannot drop capabilities here: {probe.stderr.decode(errors='replace').strip()}")
    return (setpriv, *NO_DAC, "--")


def writable_again(root: Path) -> None:
    """Every mode the case set undone, so that the temp folder can be removed."""
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """Every case run in one unprivileged process (``tests.support.batchrun``: one start-up for all), by id."""
    prefix = unprivileged()
    roots = {}
    for bad in CASES:
        roots[bad.id] = root = tmp_path_factory.mktemp(bad.id)
        newer.materialize_all(root, bad)
    before = {case_id: snapshot(root) for case_id, root in roots.items()}
    batch = tmp_path_factory.mktemp("batch")
    listed = [{"id": bad.id, "entry": bad.entry, "args": list(bad.args), "cwd": str(roots[bad.id])} for bad in CASES]
    (batch / "runs.json").write_text(json.dumps(listed))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    command = [
        *prefix,
        sys.executable,
        "-m",
        "tests.support.batchrun",
        str(batch / "runs.json"),
        str(batch / "out.json"),
    ]
    done = subprocess.run(command, cwd=batch, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    outputs = json.loads((batch / "out.json").read_text())
    ran = {}
    for case_id, root in roots.items():
        code, out = outputs[case_id]
        ran[case_id] = Ran(code, out, before[case_id], snapshot(root))
        writable_again(root)
    return ran


def test_the_unprivileged_process_cannot_write_a_read_only_folder(tmp_path: Path):
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o555)
    try:
        probe = [*unprivileged(), sys.executable, "-c", f"open({str(folder / 'f')!r}, 'w')"]
        done = subprocess.run(probe, capture_output=True, text=True, check=False)
        assert done.returncode != 0 and "PermissionError" in done.stderr, done.stderr
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("bad", CASES, ids=lambda bad: bad.id)
def test_a_path_it_may_not_use_is_one_clear_error(bad: Bad, runs: dict[str, Ran]):
    check(bad, runs[bad.id])
