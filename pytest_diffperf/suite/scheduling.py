"""Splitting a run among CI jobs and xdist workers: this job's shard, unfit scenarios, ``--dist loadgroup``.

The pure planning lives in ``sharding``; this module applies it to a pytest run.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..sharding.devices import DeviceShare
from ..sharding.plan import Shard
from .session import DiffperfSession
from .stash import SCENARIO_KEY


def default_loadgroup(config: pytest.Config) -> None:
    """``-n`` without ``--dist``: keep each server group on one worker (xdist would pick ``load``)."""
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", None) == "no":
        config.option.dist = "loadgroup"


class XdistHooks:
    """Registered on the xdist controller only (xdist's hooks exist only where xdist is installed)."""

    def __init__(self, session: DiffperfSession):
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """With ``--dist loadgroup``, schedule by server group (``xdist_scheduling.ServerGroupScheduling``)."""
        if config.getvalue("dist") != "loadgroup":
            return None
        from .xdist_scheduling import ServerGroupScheduling  # imports xdist, which only the controller has here

        return ServerGroupScheduling(config, log, self.session.spec)


def configure_xdist(config: pytest.Config, session: DiffperfSession) -> None:
    """On the xdist controller, register the hooks that keep each server group on one worker."""
    if getattr(config, "workerinput", None) is None and config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(session), "diffperf-xdist")


def deselect_other_shards(config: pytest.Config, items: list[pytest.Item], shard: Shard) -> None:
    """Keep this shard's scenarios; tests that are not scenarios run in shard 1."""
    mine = set(shard.scenarios)
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        scenario = item.stash.get(SCENARIO_KEY, None)
        ours = scenario in mine if scenario is not None else shard.number == 1
        (keep if ours else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def skip_unfit(items: list[pytest.Item], share: DeviceShare, session: DiffperfSession) -> None:
    """Skip, with the reason, scenarios that need more devices than this process has."""
    for item in items:
        scenario = item.stash.get(SCENARIO_KEY, None)
        spec = session.spec(scenario) if scenario is not None else None
        reason = share.skip_reason(spec.num_gpus) if spec is not None else None
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"{item.name}: {reason}"))


def group_adjacent(items: list[pytest.Item], session: DiffperfSession) -> None:
    """Each server group's tests adjacent, groups in order of first appearance (one server start each)."""

    def group(item: pytest.Item) -> object:
        scenario = item.stash.get(SCENARIO_KEY, None)
        return (scenario is not None and session.spec(scenario)) or item.nodeid

    first: dict[object, int] = {}
    for index, item in enumerate(items):
        first.setdefault(group(item), index)
    items.sort(key=lambda item: first[group(item)])
