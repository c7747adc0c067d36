"""Git, as the plugin uses it: the commit a folder is at, revisions, worktrees of their own, commit ranges."""

from __future__ import annotations

import contextlib
import re
import subprocess
from pathlib import Path

from .lifecycle import exit_text

COMMIT = re.compile(r"[0-9a-fA-F]{7,64}")  # a commit id (SHA-1 or SHA-256, possibly abbreviated)
TIMEOUT_S = 120.0  # a worktree of a large repository takes a while to check out


class GitError(Exception):
    """A git command that failed: its command line and what it printed."""

    def __init__(self, command: list[str], output: str):
        self.command, self.output = command, output.strip()
        super().__init__(f"{' '.join(command)}: {self.output or 'failed'}")


def git(repo: Path, *args: str, timeout: float = TIMEOUT_S) -> str:
    """``git -C repo ARGS``'s output (trailing whitespace stripped); ``GitError`` when it fails or git is missing."""
    command = ["git", "-C", str(repo), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(command, str(exc)) from None
    if done.returncode != 0:  # killed, git says nothing: how it ended
        raise GitError(command, done.stderr or done.stdout or f"git ended with {exit_text(done.returncode)}")
    return done.stdout.rstrip()


def is_commit(text: str) -> bool:
    """Whether ``text`` is a commit id (hex digits only: safe in a file name)."""
    return COMMIT.fullmatch(text) is not None


def head_commit(folder: Path | None = None) -> str | None:
    """HEAD of the git checkout holding ``folder`` (default: the working directory); None outside one."""
    try:
        return git(folder or Path.cwd(), "rev-parse", "HEAD", timeout=10) or None
    except GitError:
        return None


def toplevel(folder: Path) -> Path | None:
    """The root of the checkout holding ``folder``; None outside one."""
    try:
        return Path(git(folder, "rev-parse", "--show-toplevel", timeout=10))
    except GitError:
        return None


def common_dir(repo: Path) -> Path:
    """The repository's own ``.git`` folder (shared by all its worktrees)."""
    return (repo / git(repo, "rev-parse", "--git-common-dir", timeout=10)).resolve()


def commit_of(repo: Path, rev: str) -> str | None:
    """The full commit ``rev`` names in ``repo``; None when it names none."""
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", timeout=10)
    except GitError:
        return None


def is_shallow(repo: Path) -> bool:
    try:
        return git(repo, "rev-parse", "--is-shallow-repository", timeout=10) == "true"
    except GitError:
        return False


def has_path(repo: Path, commit: str, path: str) -> bool:
    """Whether ``commit`` holds ``path`` (a folder or file; ``""``: the root)."""
    try:
        git(repo, "cat-file", "-e", f"{commit}:{path}", timeout=10)
    except GitError:
        return False
    return True


def modules(repo: Path, commit: str, folder: str) -> list[str]:
    """The Python modules and packages (``*.py``, folders with ``__init__.py``) at the top of ``folder`` (``""``:
    the root) in ``commit``: what a ``PYTHONPATH`` of it can import."""
    prefix = f"{folder}/" if folder else ""
    out = git(repo, "ls-tree", "-r", "--name-only", commit, "--", folder or ".", timeout=30)
    found = set()
    for path in out.splitlines():
        parts = path[len(prefix) :].split("/") if path.startswith(prefix) else []
        if (len(parts) == 1 and parts[0].endswith(".py")) or (len(parts) == 2 and parts[1] == "__init__.py"):
            found.add(parts[0].removesuffix(".py"))
    return sorted(found)


def changes(folder: Path) -> list[str]:
    """``git status --porcelain`` of a checkout's tracked files: what differs from its commit (a build's new
    files, results files and the like are not changes)."""
    out = git(folder, "status", "--porcelain", "--untracked-files=no", timeout=30)
    return [line for line in out.splitlines() if line.strip()]


def subject(repo: Path, commit: str) -> str:
    return git(repo, "log", "-1", "--format=%s", commit, timeout=10)


def add_worktree(repo: Path, folder: Path, commit: str) -> None:
    """Check ``commit`` out into ``folder`` (a detached worktree of ``repo``); stale worktrees pruned first."""
    git(repo, "worktree", "prune")
    git(repo, "worktree", "add", "--detach", "--quiet", str(folder), commit)


def remove_worktree(repo: Path, folder: Path) -> None:
    """Remove a worktree and its entry (also when its folder is gone already, or an interrupted ``add`` left it
    locked "initializing": ``git worktree prune`` never removes a locked entry)."""
    with contextlib.suppress(GitError):
        git(repo, "worktree", "unlock", str(folder))
    with contextlib.suppress(GitError):
        git(repo, "worktree", "remove", "--force", "--force", str(folder))
    with contextlib.suppress(GitError):
        git(repo, "worktree", "prune")


def commits_between(repo: Path, good: str, bad: str) -> list[str]:
    """The commits after ``good`` up to ``bad`` (included), oldest first, on the ancestry path between them."""
    out = git(repo, "rev-list", "--reverse", "--ancestry-path", f"{good}..{bad}")
    return out.split()
