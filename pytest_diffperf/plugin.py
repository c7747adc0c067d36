"""pytest entry point: wiring only. The work lives in session, collect, report and the modules they use.

Heavy modules are imported only once ``--diffperf`` or regeneration (``--regen-baselines``) is
asked for, so a plain ``pytest`` is unaffected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .errors import DiffperfError
from .options import SESSION_KEY, add_options, ground_truth_requested, requested


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config):
    if config.getoption("diffperf") or config.getini("diffperf"):
        from .distribute import default_loadgroup

        default_loadgroup(config)  # before xdist reads --dist
    return (yield)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): pytest-xdist group (one server group per worker)")
    regen = requested(config)
    if not (config.getoption("diffperf") or config.getini("diffperf") or regen or ground_truth_requested(config)):
        return
    from .distribute import configure_xdist
    from .report import ResultsCollector
    from .session import DiffperfSession

    try:
        ds = DiffperfSession.from_config(config)
        if regen:
            from .regenrun import start_regen

            start_regen(config, ds)
    except DiffperfError as exc:
        raise pytest.UsageError(f"diffperf: {exc}") from None
    config.stash[SESSION_KEY] = ds
    configure_xdist(config, ds)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args = [str(ds.baselines.primary)]  # no paths given: run the scenarios, not the test files
    artifacts = ds.consistency.artifacts_dir if ds.consistency else None
    collector = ResultsCollector(ds.header(), ds.settings.diffperf_json, artifacts)
    config.pluginmanager.register(collector, "diffperf-results")


def pytest_unconfigure(config: pytest.Config) -> None:
    ds = config.stash.get(SESSION_KEY, None)
    if ds is not None:
        ds.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    ds = parent.config.stash.get(SESSION_KEY, None)
    if ds is not None and file_path == ds.baselines.primary:
        from .collect import BaselineFile

        return BaselineFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """This shard's tests only; each server group's tests adjacent, groups in order of first appearance."""
    ds = config.stash.get(SESSION_KEY, None)
    if ds is None:
        return
    from .distribute import deselect_other_shards, skip_unfit

    if ds.shard is not None:
        deselect_other_shards(config, items, ds.shard)
    skip_unfit(items, ds.devices)
    first: dict[object, int] = {}
    for index, item in enumerate(items):
        first.setdefault(getattr(item, "spec", None) or item.nodeid, index)
    items.sort(key=lambda item: first[getattr(item, "spec", None) or item.nodeid])


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop a group's server after its last test."""
    ds = item.config.stash.get(SESSION_KEY, None)
    if ds is not None and ds.pool.running() is not None and getattr(nextitem, "spec", None) != ds.pool.running():
        ds.pool.release()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if call.excinfo is not None and item.config.stash.get(SESSION_KEY, None) is not None:
        from .collect import plain_longrepr

        report.longrepr = plain_longrepr(item, call.excinfo) or report.longrepr
    return report


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    ds = config.stash.get(SESSION_KEY, None)
    if ds is None:
        return None
    return ds.header_lines()
