"""Regeneration inside a pytest run: started with the session, its summary registered as a plugin."""

from __future__ import annotations

import shutil

import pytest

from .errors import DiffperfError
from .regen.policy import RegenSettings
from .regen.regenerator import Regenerator
from .regenreport import RegenSummary
from .serving.launchers import group_key
from .session import DiffperfSession

REGEN_KEY: pytest.StashKey[Regenerator] = pytest.StashKey()


def start_regen(config: pytest.Config, ds: DiffperfSession) -> None:
    """Check the run can regenerate (DiffperfError if not), then stash it and register its summary."""
    s = ds.settings
    try:
        settings = RegenSettings.parse(s.regen_policy, s.regen_min_improvement, s.regen_dry_run)
        ids = ds.scenario_ids()
        run = Regenerator.start(
            settings, ds.baselines, s.diffperf_hardware, ds.cases, ids, group_key(ds.cases, ds.launcher.name),
            s.diffperf_cases,
        )  # fmt: skip
    except DiffperfError:
        shutil.rmtree(ds.workdir, ignore_errors=True)  # an empty folder; nothing of this run stays
        raise
    config.stash[REGEN_KEY] = run
    config.pluginmanager.register(RegenSummary(run.settings, run.metadata), "diffperf-regen")


def get_regen(config: pytest.Config) -> Regenerator | None:
    return config.stash.get(REGEN_KEY, None)
