"""Splitting a run: this job's shard, this xdist worker's devices and ports, ``--dist loadgroup``.

Pure logic lives in ``sharding`` and ``devices``; this module applies it to a pytest run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .platforms import device_env_var
from .serving.launchers import group_key
from .sharding.devices import DeviceShare, device_share, visible_devices
from .options import Settings
from .sharding.plan import Shard, assign, server_groups

if TYPE_CHECKING:
    from .session import DiffperfSession


def default_loadgroup(config: pytest.Config) -> None:
    """``-n`` without ``--dist``: keep each server group on one worker (xdist would pick ``load``)."""
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", None) == "no":
        config.option.dist = "loadgroup"


class XdistHooks:
    """Registered on the xdist controller only (xdist's hooks exist only where xdist is installed)."""

    def __init__(self, ds: DiffperfSession):
        self.ds = ds

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log):
        """With ``--dist loadgroup``, schedule by server group ourselves.

        xdist's own loadgroup renames node ids (``id@group``), which pytest >= 9.2 no longer allows;
        a scheduler keyed on the scenario's server group works with every version.
        """
        if config.getvalue("dist") != "loadgroup":
            return None
        from xdist.scheduler import LoadScopeScheduling

        ds = self.ds

        class ServerGroupScheduling(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                base = nodeid.split("@", 1)[0]  # xdist's suffix, where pytest still lets it add one
                spec = ds.spec(base.rsplit("::", 1)[-1])
                return spec.key if spec is not None else base

        return ServerGroupScheduling(config, log)


def configure_xdist(config: pytest.Config, ds: DiffperfSession) -> None:
    """On the xdist controller, register the hooks that keep each server group on one worker."""
    if getattr(config, "workerinput", None) is None and config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(ds), "diffperf-xdist")


def share_of(config: pytest.Config, settings: Settings) -> DeviceShare:
    """This process's devices and ports: an xdist worker's slice, else all of them."""
    var = device_env_var(settings.diffperf_hardware)
    devices = visible_devices(settings.diffperf_devices, var)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return device_share(devices, var, getattr(config.option, "numprocesses", None) or 0, None)
    return device_share(devices, var, workerinput["workercount"], workerinput["workerid"])


def shard_of(ds: DiffperfSession, k: int, n: int) -> Shard:
    """Shard K of N of the session's scenarios (the plan ``diffperf plan`` prints for the same files)."""
    ids = ds.scenario_ids()
    groups = server_groups(ids, ds.baselines.scenarios, group_key(ds.cases, ds.launcher.name))
    return assign(groups, n)[k - 1]


def shard_header(shard: Shard) -> str:
    return (
        f"diffperf: shard {shard.number}/{shard.of}: {len(shard.scenarios)} scenario(s), "
        f"{len(shard.groups)} server start(s), estimated {shard.estimated_s:.0f} s"
    )


def deselect_other_shards(config: pytest.Config, items: list[pytest.Item], shard: Shard) -> None:
    """Keep this shard's scenarios; tests that are not scenarios run in shard 1."""
    from .collect import ScenarioItem

    mine = set(shard.scenarios)
    keep, drop = [], []
    for item in items:
        ours = item.name in mine if isinstance(item, ScenarioItem) else shard.number == 1
        (keep if ours else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def skip_unfit(items: list[pytest.Item], share: DeviceShare) -> None:
    """Skip, with the reason, scenarios that need more devices than this process has."""
    for item in items:
        spec = getattr(item, "spec", None)
        reason = share.skip_reason(spec.num_gpus) if spec is not None else None
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"{item.name}: {reason}"))
