"""Fixtures shared by the whole test suite: SGLang's vendored files and the fixture baseline layouts."""

from __future__ import annotations

import copy
import gc
import json
import os
import re
from collections.abc import Generator
from pathlib import Path

import pytest

from pytest_diffperf._util.text import truthy
from tests.support import forks, tempcheck
from tests.support.paths import LAYOUT, SGLANG_DATA, SINGLE
from tests.support.preload import preload
from tests.support.refserver import Servers

try:
    from hypothesis import settings
except ImportError:  # no test extra: the README's main job (pytest --diffperf=pr_test) loads this file too
    pass
else:
    # Property tests draw hypothesis's default 100 examples here, 400 in CI (CI=true) unless a test sets its own.
    settings.register_profile("ci", max_examples=400)
    settings.load_profile("ci" if truthy(os.environ.get("CI", "")) else "default")


FORK_SERVER = pytest.StashKey[forks.ForkServer]()
# The files that take longest (docs/benchmarks.md, the full suite's slowest tests), collected first: xdist's
# --dist loadfile hands files out in collection order (reordering by test count is turned off below), so a
# long file never starts near the end while the other worker runs out of work.
LONGEST_FIRST = (
    "tests/test_ci_workflows.py",
    "tests/plugin/test_bundled_suite.py",
    "tests/test_benchmarks.py",
    "tests/plugin/test_orphans.py",
    "tests/commands/test_bisect_e2e.py",
    "tests/plugin/test_bundled_ci.py",
    "tests/plugin/test_bundled_ab.py",
    "tests/plugin/test_bundled_ground_truth.py",
    "tests/plugin/test_malformed_inputs.py",  # the fast tests' longest
)


# A test module whose every test is a server test: its pytestmark is (or starts with) the marker.
SERVER_MODULE = re.compile(r"^pytestmark = (?:\[\s*)?pytest\.mark\.server\b", re.MULTILINE)
FAST = "not server"  # the README's -m for the fast tests

TEMP_DIR = pytest.StashKey[Path]()
SESSION = pytest.StashKey[pytest.Session]()


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist's: order files by their number of tests
        config.option.loadscopereorder = False
    # the test suite (not the README's main job, which loads this file too): one temp folder, checked empty at
    # the end; made by the controller (or the only process), inherited by every process it starts
    if not config.getoption("diffperf", None) and "PYTEST_XDIST_WORKER" not in os.environ:
        config.stash[TEMP_DIR] = tempcheck.redirect()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """The test suite collects with the cyclic garbage collector off, then freezes what collection loaded out of its
    sight: torch, open_clip, the plugin, the test modules and items (~700k objects that live to the end). Each full
    collection during the tests then walks the tests' own objects only: the collector's time per fast-test worker
    fell from 8-10 s to 1.5-5 s (docs/benchmarks-archive.md, "Test suite"). The README's main job runs as a user's
    would."""
    if session.config.getoption("diffperf", None):
        return (yield)
    gc.disable()
    try:
        return (yield)
    finally:
        gc.collect()
        gc.freeze()
        gc.enable()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The fast tests (``-m 'not server'``) do not import the modules of server tests only, which they would
    deselect whole: each process imported and assertion-rewrote 36 of them for nothing (1.3 s of its collection)."""
    if config.option.markexpr != FAST or not collection_path.match("test_*.py"):
        return None
    return True if SERVER_MODULE.search(collection_path.read_text(encoding="utf-8")) else None


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[SESSION] = session


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected: the fast tests start no fork server
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Collect the longest files first. Load the plugin's modules now when a selected test names pytester, so that
    collection's freeze takes them in (see ``pytest_fixture_setup``); a run that selects none (a unit-test file)
    skips the ~3 s this costs. Start the fork server of reference servers when a server test is selected (~6 CPU-s
    per worker)."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
    if any("pytester" in getattr(item, "fixturenames", ()) for item in items):
        preload()
    if any(item.get_closest_marker("server") for item in items) and forks.available():
        config.stash[FORK_SERVER] = forks.ForkServer().publish()


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[object]) -> None:
    """However a test takes pytester (as an argument or by ``request.getfixturevalue``), the plugin's modules are
    loaded before pytester's ``sys.modules`` snapshot: it drops what a test imports, and numpy cannot load twice.
    Once per process; at collection already when a selected test names pytester (then frozen with the rest)."""
    if fixturedef.argname == "pytester":
        preload()


def pytest_unconfigure(config: pytest.Config) -> None:
    if FORK_SERVER in config.stash:
        config.stash[FORK_SERVER].stop()
    if TEMP_DIR in config.stash:  # after every process of the run has ended
        left = tempcheck.finish(config.stash[TEMP_DIR])
        session = config.stash.get(SESSION, None)
        if left and session is not None and not config.option.collectonly:
            print(f"\nERROR: the tests left {len(left)} file(s) or folder(s) in the temp folder: {', '.join(left)}")
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory):
    """``shared_server(model, *args)``: a running reference server (``tests.support.refserver.Server``), one per
    model and arguments for the whole session (per xdist worker), for tests that only read from it."""
    servers = Servers(lambda: tmp_path_factory.mktemp("refserver"))
    yield servers.shared
    servers.stop()


@pytest.fixture
def sglang_data() -> Path:
    """SGLang's own baseline files and code (the vendored copy of ../shared/sglang-data)."""
    return SGLANG_DATA


@pytest.fixture
def layout() -> Path:
    return LAYOUT


@pytest.fixture
def single() -> Path:
    return SINGLE


@pytest.fixture
def h100_doc() -> dict:
    """A fresh copy of the fixture H100 platform file."""
    return copy.deepcopy(json.loads((LAYOUT / "perf_baselines" / "h100.json").read_text()))


@pytest.fixture
def write(tmp_path: Path):
    """write(relative_path, data) -> path: JSON-encode data (text is written as is) under tmp_path."""

    def _write(rel: str, data: object) -> Path:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data if isinstance(data, str) else json.dumps(data, indent=1))
        return path

    return _write
