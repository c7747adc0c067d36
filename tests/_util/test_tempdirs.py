"""Old work folders and a killed writer's temporary files are removed; nothing else is."""

from __future__ import annotations

import os
import tempfile
import time

from pytest_diffperf._util import atomicfile, tempdirs
from pytest_diffperf._util.tempdirs import sweep


def _age(path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old), follow_symlinks=False)


def test_sweep_removes_only_old_marked_real_folders_of_the_prefix(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    old, fresh, other = tempdirs.make("diffperf-"), tempdirs.make("diffperf-"), tempdirs.make("other-")
    users = tmp_path / "diffperf-history"  # a user's own folder of that name: no marker
    forged = tmp_path / "diffperf-forged"  # a marker file of another content
    (forged / "server-1").mkdir(parents=True)
    (forged / tempdirs.MARKER).write_text("x")
    for folder in (old, fresh, other, users, forged):
        (folder / "server-1").mkdir(parents=True, exist_ok=True)
        (folder / "server-1" / "server.log").write_text("log")
        _age(folder / "server-1", 10 * 24 * 3600)
        if (folder / tempdirs.MARKER).exists():
            _age(folder / tempdirs.MARKER, 10 * 24 * 3600)
        _age(folder, 10 * 24 * 3600)
    (fresh / "server-2").mkdir()  # written to just now
    victim = tmp_path / "keep"
    victim.mkdir()
    (tmp_path / "diffperf-link").symlink_to(victim)
    assert sweep("diffperf-", root=tmp_path) == [old]
    assert not old.exists() and all(f.is_dir() for f in (fresh, other, victim, users, forged))


def test_next_locked_write_removes_a_killed_writers_temp_files(tmp_path):
    target = tmp_path / "cpu.json"
    target.write_text("{}")
    stale, recent = tmp_path / ".cpu.json.abc123.tmp", tmp_path / ".cpu.json.def456.tmp"
    stale.write_text("half")
    recent.write_text("in progress")
    _age(stale, 3600)
    unrelated = tmp_path / ".other.json.abc.tmp"
    unrelated.write_text("x")
    _age(unrelated, 3600)
    assert atomicfile.update(target, lambda _old: '{"a": 1}')
    assert not stale.exists() and recent.exists() and unrelated.exists()
    assert target.read_text() == '{"a": 1}'


def test_temp_files_are_git_ignored():
    from tests.support.paths import REPO

    assert ".*.tmp" in (REPO / ".gitignore").read_text().splitlines()
