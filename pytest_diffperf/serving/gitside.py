"""A ``git=REV[:SUBDIR]`` side: the revision checked out into a worktree of its own, served from there.

Without ``install`` the side is ``pythonpath=<worktree>/SUBDIR``; with it, the side is ``python=`` of
a venv (``--system-site-packages``: what the base shares with this environment is not installed
again, pip included) into which ``pip install <worktree>/SUBDIR`` put the revision, cached by commit under
``cache=DIR`` (default ``$XDG_CACHE_HOME/pytest-diffperf``) and built once under a file lock.
Worktrees live under the run's temp folder and go at :meth:`GitCheckouts.close` (the session's
end, also an interrupted one's; a killed run's are swept with the temp folders, ``git worktree
prune`` forgets them); with ``cache=DIR`` they are kept in ``DIR/<commit>`` for later runs, and a
kept one with changes is an error rather than a silent other build. Every mistake (no
repository, a revision that does not exist, a SUBDIR it lacks, a dirty kept checkout, a failing
install) is one ``DiffperfError`` before any server starts.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from filelock import FileLock

from .._util import git
from .._util.cachedir import default_cache
from .._util.lifecycle import exit_text, run_to_end
from ..errors import DiffperfError
from .sidespec import GitSource, SideSpec

BUILT_MARK = ".diffperf-built"  # written into a venv once its install succeeded
LOG_TAIL_LINES = 15


@dataclass(frozen=True)
class BuiltSide:
    """A side as it is served (``git=`` turned into ``pythonpath=`` or ``python=``), and its commit."""

    spec: SideSpec
    commit: str | None  # None: not known (a program or environment given by path)
    checkout: Path | None = None  # the worktree it is served from (None: not a git= side, or a cached venv)


@dataclass
class GitCheckouts:
    """The run's ``git=`` sides: one worktree per repository and commit; :meth:`close` removes the temporary ones."""

    home: Path  # the folder the tests run from: its repository is the default one
    progress: Callable[[str], None] = lambda _msg: None
    made: dict[tuple[Path, str], Path] = field(default_factory=dict)
    temporary: list[tuple[Path, Path]] = field(default_factory=list)  # (repository, worktree) to remove
    _tmp: Path | None = None

    def build(self, spec: SideSpec, source: str) -> BuiltSide:
        """The side ``spec`` names, served as it says; ``current`` is the checkout the tests run from."""
        if spec.git is None:
            return BuiltSide(spec, self._current_commit() if spec.is_current else None)
        src = spec.git
        repo = self._repository(src, source)
        commit = git.commit_of(repo, src.rev)
        if commit is None:
            shallow = " (a shallow clone: fetch more history, e.g. actions/checkout's fetch-depth: 0)"
            hint = shallow if git.is_shallow(repo) else " (fetch it first, e.g. git fetch origin main)"
            raise DiffperfError(f"revision {src.rev!r} does not exist in {repo}{hint}", source=source, key="git")
        if src.subdir and not git.has_path(repo, commit, src.subdir):
            raise DiffperfError(f"commit {commit[:12]} of {repo} has no {src.subdir!r}", source=source, key="git")
        if src.subdir and src.install is None and not git.modules(repo, commit, src.subdir):
            raise DiffperfError(
                f"{src.subdir!r} of commit {commit[:12]} holds no Python module or package: its server would import "
                "the installed one, not this commit's; name the folder that holds the server's package",
                source=source,
                key="git",
            )
        gitless = replace(spec, git=None)
        if src.install is not None:
            python = self._venv(repo, commit, src, source)
            return BuiltSide(replace(gitless, python=str(python)), commit)
        checkout = self._checkout(repo, commit, src, source)
        served = str(checkout / src.subdir) if src.subdir else str(checkout)
        return BuiltSide(replace(gitless, pythonpath=(served, *spec.pythonpath)), commit, checkout)

    def _current_commit(self) -> str | None:
        commit = git.head_commit(self.home)
        if commit is None:
            return None
        try:
            dirty = bool(git.changes(self.home))
        except git.GitError:
            dirty = False
        return f"{commit}-dirty" if dirty else commit

    def _repository(self, src: GitSource, source: str) -> Path:
        folder = self.home if src.repo is None else (self.home / Path(src.repo).expanduser())
        key = "git" if src.repo is None else "repo"
        if not folder.is_dir():
            raise DiffperfError(f"{src.repo!r} is not a folder", source=source, key=key)
        top = git.toplevel(folder)
        if top is None:
            where = "the folder the tests run from" if src.repo is None else "it"
            raise DiffperfError(
                f"{folder} is not in a git repository: git=REV needs one ({where}; or give repo=PATH)",
                source=source,
                key=key,
            )
        return top

    def _checkout(self, repo: Path, commit: str, src: GitSource, source: str) -> Path:
        """The worktree of ``commit``: made once per run, or kept in ``cache=DIR`` (reused when clean)."""
        known = self.made.get((repo, commit))
        if known is not None:
            return known
        with FileLock(str(git.common_dir(repo) / "diffperf-worktrees.lock")):  # xdist workers check out at once
            folder = self._checkout_locked(repo, commit, src, source)
        self.made[(repo, commit)] = folder
        return folder

    def _checkout_locked(self, repo: Path, commit: str, src: GitSource, source: str) -> Path:
        if src.cache is not None:
            folder = _cache_folder(Path(src.cache).expanduser().absolute(), source) / commit
            if folder.exists():
                self._check_kept(folder, commit, source)
                self.progress(f"diffperf: {commit[:12]} checked out already in {folder}")
            else:
                try:
                    self._add(repo, folder, commit, source)
                except BaseException:  # interrupted or failed: no half checkout kept for a later run to trust
                    git.remove_worktree(repo, folder)
                    shutil.rmtree(folder, ignore_errors=True)
                    raise
        else:
            if self._tmp is None:
                self._tmp = Path(tempfile.mkdtemp(prefix="diffperf-git-"))
            folder = self._tmp / commit[:12]
            self.temporary.append((repo, folder))  # before the checkout: close() removes an interrupted one too
            self._add(repo, folder, commit, source)
        return folder

    def _add(self, repo: Path, folder: Path, commit: str, source: str) -> None:
        self.progress(f"diffperf: checking out {commit[:12]} ({git.subject(repo, commit)}) into {folder}")
        try:
            git.add_worktree(repo, folder, commit)
        except git.GitError as exc:
            raise DiffperfError(f"cannot check out {commit[:12]}: {exc.output}", source=source, key="git") from None

    def _check_kept(self, folder: Path, commit: str, source: str) -> None:
        try:
            at, changed = git.head_commit(folder), git.changes(folder)
        except git.GitError as exc:
            raise DiffperfError(
                f"{folder} is not a checkout: {exc.output}; remove it", source=source, key="cache"
            ) from None
        if at != commit:
            raise DiffperfError(f"{folder} is at {at}, not {commit}: remove it", source=source, key="cache")
        if changed:
            shown = ", ".join(line[3:] for line in changed[:3]) + (", ..." if len(changed) > 3 else "")
            raise DiffperfError(
                f"the kept checkout {folder} of {commit[:12]} has changes ({shown}): it would not serve that commit; "
                "remove the folder to check it out afresh",
                source=source,
                key="cache",
            )

    def _venv(self, repo: Path, commit: str, src: GitSource, source: str) -> Path:
        """A venv with ``pip install <worktree>/SUBDIR`` of ``commit``: built once, reused by every later run."""
        assert src.install is not None
        flavour = hashlib.sha256(shlex.join([src.subdir, *src.install]).encode()).hexdigest()[:8]
        root = Path(src.cache).expanduser().absolute() if src.cache is not None else default_cache()
        venv = _cache_folder(root / "venvs", source) / f"{commit}-{flavour}"
        python = venv / "bin" / "python"
        with FileLock(str(venv) + ".lock"):
            if (venv / BUILT_MARK).is_file():
                self.progress(f"diffperf: {commit[:12]} installed already in {venv}")
                return python
            shutil.rmtree(venv, ignore_errors=True)  # an interrupted build's leftovers
            checkout = self._checkout(repo, commit, src, source)
            target = checkout / src.subdir if src.subdir else checkout
            log = venv.parent / f"{venv.name}.log"
            self.progress(f"diffperf: installing {commit[:12]} into {venv} (log: {log})")
            steps = [
                [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                [str(python), "-m", "pip", "install", "--disable-pip-version-check", *src.install, str(target)],
            ]
            try:
                self._install(steps, log, commit, source)
            except BaseException:  # a failed, interrupted or terminated build: its step stopped, no venv left
                shutil.rmtree(venv, ignore_errors=True)
                raise
            (venv / BUILT_MARK).write_text(f"{commit}\n")
        return python

    def _install(self, steps: list[list[str]], log: Path, commit: str, source: str) -> None:
        """Run the build's steps, logged; an interrupt stops the running one (and waits for it) before it goes on."""
        with log.open("w") as out:
            for step in steps:
                out.write(f"$ {shlex.join(step)}\n")
                out.flush()
                code = run_to_end(step, out)
                if code != 0:
                    tail = "\n".join(log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
                    raise DiffperfError(
                        f"installing {commit[:12]} failed ({shlex.join(step[:4])} ... ended with {exit_text(code)}); "
                        f"log: {log}\n{tail}",
                        source=source,
                        key="install",
                    )

    def close(self) -> None:
        """Remove the run's temporary worktrees (kept ones stay)."""
        for repo, folder in self.temporary:
            git.remove_worktree(repo, folder)
        self.temporary.clear()
        self.made.clear()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _cache_folder(folder: Path, source: str) -> Path:
    """``folder``, made where it is missing; DiffperfError (key ``cache``) where it cannot be a folder."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DiffperfError(
            f"cannot keep checkouts and venvs in {folder}: {exc.strerror or exc}", source=source, key="cache"
        ) from None
    return folder
