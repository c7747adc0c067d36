"""``git=REV[:SUBDIR]`` sides: checked out once into a worktree of their own, served from it, removed at the end."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.serving.gitside import BUILT_MARK, GitCheckouts
from pytest_diffperf.serving.sidespec import parse_side_spec
from tests.support import inline_backend
from tests.support.gitrepo import commit, git, init, worktrees

SOURCE = "--diffperf-base"


@pytest.fixture
def repo(tmp_path):
    """Two commits: python/sidemod.py says which one it is."""
    repo = init(tmp_path / "repo")
    (repo / "python").mkdir()
    (repo / "python" / "sidemod.py").write_text("WHICH = 'first'\n")
    commit(repo, "first")
    (repo / "python" / "sidemod.py").write_text("WHICH = 'second'\n")
    (repo / "notes").mkdir()
    (repo / "notes" / "README.md").write_text("no code here\n")
    commit(repo, "second")
    return repo


def build(checkouts: GitCheckouts, text: str):
    return checkouts.build(parse_side_spec(text, SOURCE), SOURCE)


def which(python: str, path: str | None = None) -> str:
    env = {"PYTHONPATH": path} if path else {}
    code = "import sidemod; print(sidemod.WHICH, sidemod.__file__)"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, env=env).stdout


def test_a_revision_is_served_from_its_own_worktree_and_removed_at_the_end(repo, tmp_path):
    lines: list[str] = []
    checkouts = GitCheckouts(repo / "python", lines.append)  # the repository the tests run from: any folder in it
    built = build(checkouts, "git=HEAD~1:python; args=--x")
    first = git(repo, "rev-parse", "HEAD~1")
    assert built.commit == first
    (served,) = built.spec.pythonpath
    assert Path(served) == built.checkout / "python" and built.checkout.name == first[:12]
    assert which(sys.executable, served).startswith("first ")
    assert built.spec.args == ("--x",) and built.spec.git is None and built.spec.text == "git=HEAD~1:python; args=--x"
    assert "(first)" in lines[0]
    assert build(checkouts, "git=main~1:python").checkout == built.checkout  # one worktree per commit and run
    assert worktrees(repo) == [str(built.checkout)]
    checkouts.close()
    assert built.checkout is not None
    assert worktrees(repo) == [] and not built.checkout.exists()
    assert git(repo, "status", "--porcelain") == ""


def test_current_is_the_checkout_the_tests_run_from_marked_dirty_with_changes(repo):
    checkouts = GitCheckouts(repo)
    head = git(repo, "rev-parse", "HEAD")
    assert build(checkouts, "current").commit == head
    (repo / "python" / "sidemod.py").write_text("WHICH = 'edited'\n")
    assert build(checkouts, "current").commit == f"{head}-dirty"
    assert GitCheckouts(repo.parent).build(parse_side_spec("current", SOURCE), SOURCE).commit is None  # no repository


def test_repo_names_another_repository_relative_to_where_the_tests_run(repo, tmp_path):
    checkouts = GitCheckouts(tmp_path)
    built = checkouts.build(parse_side_spec("git=HEAD:python; repo=repo", SOURCE), SOURCE)
    assert built.commit == git(repo, "rev-parse", "HEAD")
    assert which(sys.executable, built.spec.pythonpath[0]).startswith("second ")
    checkouts.close()
    assert built.checkout is not None
    assert worktrees(repo) == [] and not built.checkout.exists()


def test_a_kept_checkout_is_reused_when_clean_and_refused_with_changes(repo, tmp_path):
    cache = tmp_path / "cache"
    lines: list[str] = []
    built = build(GitCheckouts(repo, lines.append), f"git=HEAD:python; cache={cache}")
    assert built.checkout == cache / built.commit
    again = GitCheckouts(repo, lines.append)
    assert build(again, f"git=HEAD:python; cache={cache}").checkout == built.checkout
    assert lines[-1].endswith(f"checked out already in {built.checkout}")
    again.close()
    assert built.checkout.is_dir()  # kept: cache= owns it
    (built.checkout / "python" / "sidemod.py").write_text("WHICH = 'edited'\n")
    with pytest.raises(DiffperfError) as info:
        build(GitCheckouts(repo), f"git=HEAD:python; cache={cache}")
    assert info.value.key == "cache"
    assert f"the kept checkout {built.checkout} of {built.commit[:12]} has changes (python/sidemod.py)" in str(
        info.value
    )


@pytest.mark.parametrize(
    ("text", "message", "key"),
    [
        ("git=nope", "revision 'nope' does not exist in {repo} (fetch it first, e.g. git fetch origin main)", "git"),
        ("git=HEAD:docs", "commit {head} of {repo} has no 'docs'", "git"),
        ("git=HEAD:notes", "'notes' of commit {head} holds no Python module or package: its server would", "git"),
        ("git=HEAD; repo=missing", "'missing' is not a folder", "repo"),
    ],
)
def test_errors(repo, text, message, key):
    with pytest.raises(DiffperfError) as info:
        build(GitCheckouts(repo), text)
    assert (info.value.source, info.value.key) == (SOURCE, key)
    assert message.format(repo=repo, head=git(repo, "rev-parse", "HEAD")[:12]) in str(info.value)
    assert worktrees(repo) == []


@pytest.mark.parametrize("install", ["", "; install"])
def test_a_cache_that_is_a_file_is_one_error_naming_the_key(repo, tmp_path, install):
    cache = tmp_path / "cache.txt"
    cache.write_text("not a folder\n")
    with pytest.raises(DiffperfError) as info:
        build(GitCheckouts(repo), f"git=HEAD:python; cache={cache}{install}")
    assert (info.value.source, info.value.key) == (SOURCE, "cache")
    assert f"cannot keep checkouts and venvs in {cache}" in str(info.value)
    assert worktrees(repo) == [] and cache.read_text() == "not a folder\n"


def test_outside_a_repository_and_in_a_shallow_clone(repo, tmp_path):
    with pytest.raises(DiffperfError, match=r"is not in a git repository: git=REV needs one \(the folder the tests"):
        build(GitCheckouts(tmp_path), "git=HEAD")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "--quiet", "--depth=1", f"file://{repo}", str(shallow)], check=True)
    with pytest.raises(DiffperfError, match=r"does not exist in .*\(a shallow clone: fetch more history"):
        build(GitCheckouts(shallow), "git=HEAD~1")


def test_install_builds_a_venv_once_per_commit(repo, tmp_path):
    # its own build backend: no setuptools or wheel needed in a venv the README's commands built
    shutil.copy(inline_backend.__file__, repo / "python" / "inline_backend.py")
    (repo / "python" / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "inline_backend"\nbackend-path = ["."]\n'
        '[project]\nname = "sidemod"\nversion = "1"\n'
    )
    head = commit(repo, "a project")
    cache = tmp_path / "cache"
    text = f"git=HEAD:python; install=--no-build-isolation --no-deps --quiet; cache={cache}"
    lines: list[str] = []
    checkouts = GitCheckouts(repo, lines.append)
    built = build(checkouts, text)
    assert built.commit == head and built.spec.pythonpath == ()
    python = Path(built.spec.python or "")
    assert python.parent.parent.parent == cache / "venvs" and (python.parent.parent / BUILT_MARK).is_file()
    assert which(str(python)).startswith("second ")  # installed, not on a path
    checkouts.close()
    again = GitCheckouts(repo, lines.append)
    assert build(again, text).spec.python == str(python)
    assert lines[-1].endswith(f"installed already in {python.parent.parent}")
    assert again.temporary == []  # a built venv needs no checkout


def test_a_failing_install_is_one_error_with_its_log(repo, tmp_path):
    with pytest.raises(DiffperfError) as info:
        build(GitCheckouts(repo), f"git=HEAD:python; install; cache={tmp_path / 'cache'}")
    assert info.value.key == "install"
    message = str(info.value)
    assert "installing " in message and " failed (" in message and "ended with exit code 1); log: " in message
    assert "is not installable. Neither 'setup.py' nor 'pyproject.toml' found." in message  # pip's own words
    assert not [p for p in (tmp_path / "cache" / "venvs").iterdir() if p.is_dir()]  # no half-built venv kept
