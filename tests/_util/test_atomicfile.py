"""atomicfile and regenfile writes: old or new content, never a part, even under kill -9."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_diffperf._util import atomicfile
from pytest_diffperf.regen.policy import RegenSettings
from pytest_diffperf.regen.writer import apply, regenerate
from tests.support.suite import GENEROUS

METADATA = {"last_updated": "2026-01-02", "description": "kill"}  # what the writer below sets


def test_write_atomic_keeps_mode_and_writes_through_symlinks(tmp_path: Path):
    target = tmp_path / "real.json"
    target.write_text("{}")
    target.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    atomicfile.write_atomic(link, atomicfile.dumps_json({"a": "é"}))
    assert link.is_symlink() and target.read_text(encoding="utf-8") == '{\n    "a": "é"\n}\n'
    assert target.stat().st_mode & 0o777 == 0o640
    new = tmp_path / "new.json"
    atomicfile.write_atomic(new, b"x")
    assert new.read_bytes() == b"x" and new.stat().st_mode & 0o777 == atomicfile.NEW_FILE_MODE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "new.json", "real.json"]  # no temp files


def test_update_passes_current_content_and_none_leaves_the_file(tmp_path: Path):
    path = tmp_path / "f.json"
    seen: list[bytes | None] = []

    def seeing(new: str | None) -> Callable[[bytes | None], str | None]:
        def change(cur: bytes | None) -> str | None:
            seen.append(cur)
            return new

        return change

    assert atomicfile.update(path, seeing("1")) is True
    assert atomicfile.update(path, seeing(None)) is False
    assert seen == [None, b"1"] and path.read_text() == "1"
    assert atomicfile.lock_path(path) == tmp_path / ".f.json.lock"


def test_concurrent_updates_all_land(tmp_path: Path):
    """Threads appending under the lock (each FileLock is its own lock object): nothing is lost."""
    path = tmp_path / "f.json"
    path.write_text("[]")

    def add(n: int) -> None:
        def append(cur: bytes | None) -> str:
            assert cur is not None  # the file exists
            return json.dumps(json.loads(cur) + [n])

        atomicfile.update(path, append)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(json.loads(path.read_text())) == list(range(20))


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path: Path, monkeypatch):
    path = tmp_path / "f.json"
    path.write_text("old")

    def boom(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomicfile.update(path, lambda cur: "new")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".f.json.lock", "f.json"]


WRITER = textwrap.dedent(
    """
    import os
    import sys
    from pathlib import Path
    from pytest_diffperf._util.atomicfile import update

    path, versions = Path(sys.argv[1]), [Path(p).read_bytes() for p in sys.argv[2:]]
    for _ in sys.stdin:  # one writer per line, forked (imported once): the test SIGKILLs it
        pid = os.fork()
        if pid == 0:
            while True:  # rewrite the file, flipping between the two versions, until killed
                update(path, lambda current: versions[1] if current == versions[0] else versions[0])
        print(pid, flush=True)
        os.waitpid(pid, 0)
        print("reaped", flush=True)
    """
)


def big_baseline(scenarios: int) -> dict:
    steps = {str(i): 10.0 + i for i in range(50)}
    entry = {"stages_ms": {"DenoisingStage": 500.0}, "denoise_step_ms": steps, "expected_e2e_ms": 600.0}
    return {
        "metadata": {"last_updated": "2026-01-02", "description": "kill"},
        "scenarios": {f"s{i}": entry for i in range(scenarios)} | {"target": {**entry, "notes": "kept"}},
    }


@pytest.mark.server
def test_kill_9_during_writes_leaves_old_or_new_content(tmp_path: Path):
    """A process rewriting a baseline file (two regenerated versions of one scenario) back and forth
    is SIGKILLed at random moments, 25 times (25 writers forked from one that imported the module once): the file is always exactly one of the two versions,
    and the lock is never left taken. (A plain truncate-and-write fails this test.)"""
    path = tmp_path / "big.json"
    text = atomicfile.dumps_json(big_baseline(1000))  # 1.6 MB
    versions = []
    for n, e2e in enumerate((111.11, 222.22)):
        entry = {**json.loads(text)["scenarios"]["target"], "expected_e2e_ms": e2e}
        versions.append(tmp_path / f"v{n}.json")
        versions[-1].write_text(apply(text, "target", entry, METADATA))
    path.write_bytes(versions[0].read_bytes())
    (tmp_path / "writer.py").write_text(WRITER)
    expected = {v.read_text() for v in versions}
    rng = random.Random(5)
    seen = []
    with subprocess.Popen(
        [sys.executable, str(tmp_path / "writer.py"), str(path), *map(str, versions)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        for _ in range(25):
            proc.stdin.write(b"write\n")
            proc.stdin.flush()
            pid = int(proc.stdout.readline())
            time.sleep(rng.uniform(0.0, 0.1))
            os.kill(pid, signal.SIGKILL)
            assert proc.stdout.readline() == b"reaped\n"
            content = path.read_text()
            assert content in expected
            json.loads(content)
            seen.append(content)
            for tmp in tmp_path.glob(".big.json.*.tmp"):  # a cut write may leave its temp file, never the target
                tmp.unlink()
        proc.stdin.close()
    assert set(seen) == expected  # the kills landed while it was writing


def test_regenerate_decides_against_the_file_as_it_is_now(tmp_path: Path):
    def entry(e2e_ms: float) -> dict:
        return {**GENEROUS, "expected_e2e_ms": e2e_ms}  # whole entries: a write the loader would refuse is refused

    path = tmp_path / "b.json"
    path.write_text(atomicfile.dumps_json({"scenarios": {"s": entry(100.0)}}))
    improve = RegenSettings("improve", 0.05, False)
    assert regenerate(path, "s", entry(99.0), improve, METADATA).action == "kept"
    assert "metadata" not in json.loads(path.read_text())  # nothing written when kept
    assert regenerate(path, "s", entry(90.0), improve, METADATA).action == "replaced"
    dry = RegenSettings("replace", 0.05, True)
    before = path.read_bytes()
    assert regenerate(path, "t", entry(1.0), dry, METADATA).action == "added"
    assert path.read_bytes() == before
    doc = json.loads(before)
    assert doc == {"scenarios": {"s": entry(90.0)}, "metadata": METADATA}
