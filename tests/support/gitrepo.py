"""Throwaway git repositories for the ``git=`` sides and ``diffperf bisect``: made in a test's folder."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest_diffperf

# The reference server's --inject-delay default, and that default with a delay: a commit that slows every request.
DELAY_DEFAULT = 'default=[],\n        metavar="STAGE=MS",'


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def init(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "config", "user.email", "test@example.com")
    git(repo, "config", "user.name", "test")
    git(repo, "config", "commit.gpgsign", "false")
    return repo


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def with_plugin(repo: Path) -> Path:
    """A copy of this checkout's package in ``repo`` (what a side's reference server runs), uncommitted."""
    shutil.copytree(Path(pytest_diffperf.__file__).parent, repo / "pytest_diffperf",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    return repo


def inject_delay(repo: Path, stage: str, ms: float) -> None:
    """Make the reference server of ``repo``'s copy sleep ``ms`` in ``stage`` by default (its serve args)."""
    cli = repo / "pytest_diffperf" / "refserver" / "cli.py"
    text = cli.read_text()
    assert DELAY_DEFAULT in text, "the reference server's --inject-delay default moved: update tests/support/gitrepo"
    cli.write_text(text.replace(DELAY_DEFAULT, DELAY_DEFAULT.replace("[]", f"[({stage!r}, {ms!r})]")))


def worktrees(repo: Path) -> list[str]:
    """The repository's worktrees besides its own checkout."""
    lines = git(repo, "worktree", "list", "--porcelain").splitlines()
    return [line.split(" ", 1)[1] for line in lines if line.startswith("worktree ")][1:]
