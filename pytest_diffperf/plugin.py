"""pytest entry point (``pytest11``): hook functions; the work, and the other plugin objects, live in ``suite``.

The rest of the plugin is imported, and the session built, only once ``--diffperf``, regeneration
(``--regen-baselines``) or ground-truth regeneration is asked for: a plain ``pytest`` loads small
modules of it only (errors, suite.options, suite.stash, and the option parsers suite.options imports).
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from .errors import DiffperfError
from .suite.options import active, add_options, ground_truth_requested, ini_value, requested
from .suite.stash import SESSION_KEY, get_session


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """SGLang's own conftest files kept out of a diffperf session (before pytest imports the first)."""
    if active(early_config, early=True):
        from .suite.conftests import keep_out

        keep_out(early_config)


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, Any, Any]:
    if config.getoption("diffperf") or ini_value(config, "diffperf"):
        from .suite.scheduling import default_loadgroup

        default_loadgroup(config)  # before xdist reads --dist
    return (yield)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("diffperf") == "":
        raise pytest.UsageError(
            "diffperf: --diffperf: expected a tolerance profile (pr_test, long_term, ...), got nothing"
        )
    regen = requested(config)
    if not (config.getoption("diffperf") or ini_value(config, "diffperf") or regen or ground_truth_requested(config)):
        if config.getoption("diffperf_dry_run"):
            raise pytest.UsageError(
                "diffperf: --diffperf-dry-run: plans a run's scenarios: pass --diffperf PROFILE too"
            )
        return
    from .suite import junit
    from .suite.regen import start_regen
    from .suite.report import ResultsCollector
    from .suite.runs import configure_reporting
    from .suite.scheduling import configure_xdist
    from .suite.session import DiffperfSession
    from .suite.termination import register as handle_sigterm

    handle_sigterm(config)  # before the session: building a git= side (checkout, pip install) is interruptible
    try:
        session = DiffperfSession.from_config(config)
        if regen:
            start_regen(config, session)
        configure_reporting(config, session)
        junit.register(config)
    except DiffperfError as exc:
        from .suite.options import detached_paths_note

        note = detached_paths_note(config)
        raise pytest.UsageError(f"diffperf: {exc}" + (f"\ndiffperf: note: {note}" if note else "")) from None
    config.stash[SESSION_KEY] = session
    configure_xdist(config, session)
    from .suite.items import collection_args

    config.args = collection_args(config, session)
    artifacts = session.consistency.artifacts_dir if session.consistency else None
    collector = ResultsCollector(session.header(), session.settings.diffperf_json, artifacts)
    config.pluginmanager.register(collector, "diffperf-results")
    from .suite.emptyrun import EmptyRun

    config.pluginmanager.register(EmptyRun(session, collector), "diffperf-empty-run")
    from .suite.unmatched import UnmatchedReport

    config.pluginmanager.register(UnmatchedReport(session), "diffperf-unmatched")
    if session.settings.diffperf_dry_run:
        from .suite.dryrun import DryRun

        config.pluginmanager.register(DryRun(session), "diffperf-dry-run")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = get_session(config)
    if session is not None:
        session.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    session = get_session(parent.config)
    if session is not None and file_path in session.scenarios.files:
        from .suite.items import BaselineFile

        return BaselineFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """This shard's tests only; unfit scenarios skipped; each server group's tests adjacent."""
    session = get_session(config)
    if session is None:
        return
    from .suite.scheduling import deselect_other_shards, group_adjacent, skip_unfit

    if session.shard is not None:
        deselect_other_shards(config, items, session.shard)
    skip_unfit(items, session.devices, session)
    group_adjacent(items, session)


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop a group's server after its last test."""
    session = get_session(item.config)
    if session is None or session.pool.running() is None:
        return
    if getattr(nextitem, "spec", None) != session.pool.running():
        session.pool.release()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if call.excinfo is not None and get_session(item.config) is not None:
        from .suite.failure import scenario_longrepr

        report.longrepr = scenario_longrepr(item, call.excinfo) or report.longrepr
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    """A scenario whose verdict is inconclusive and did not fail the run shows as INCONCLUSIVE, counted as such."""
    if report.when == "call" and report.passed and ("diffperf_outcome", "inconclusive") in report.user_properties:
        return "inconclusive", "?", "INCONCLUSIVE"
    return None


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    session = get_session(config)
    if session is None:
        return None
    from .suite.conftests import kept_out_line

    kept = kept_out_line(config)
    return session.header_lines() + ([kept] if kept else [])
