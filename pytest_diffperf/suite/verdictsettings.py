"""The verdict settings of a run: A/B against a base build, static mode's noise and re-measures, inconclusive.

Built once from the parsed settings (a combination that does not hold is one ``DiffperfError``,
before any server starts) and kept on the session: :class:`ABRun` owns one server pool per side for the whole run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..cases import Case
from ..errors import DiffperfError
from ..perf.baselines import BaselineSet
from ..perf.schema import Tolerances
from ..platforms import canonical_platform
from ..serving.abservers import SIDES, ABServers, ServerMode, Side, SideServer, resolve_side
from ..serving.gitside import GitCheckouts
from ..serving.interference import Watch
from ..serving.launchers import Launcher, ServerSpec
from ..serving.pool import ServerPool
from ..sharding.devices import DeviceShare
from ..verdicts.design import ABDesign
from ..verdicts.metrics import VerdictPolicy, one_at_a_time
from ..verdicts.priors import NoisePriors, calibrated, calibrated_static, read_priors
from ..verdicts.static import StaticPolicy
from .options import Settings

NOISE_PRIORS_MEASURED_ON = frozenset({"cpu"})  # the runner classes the default priors were measured on


@dataclass
class ABRun:
    """A/B settings and one server pool per side, shared by every scenario of the run."""

    sides: dict[Side, SideServer]
    pools: dict[Side, ServerPool]
    design: ABDesign
    policy: VerdictPolicy
    mode: ServerMode
    checkouts: GitCheckouts | None = None  # the git= sides' worktrees, removed at close

    def servers(self, case: Case, spec: ServerSpec, timeout: float) -> ABServers:
        return ABServers(self.sides, self.pools, case, spec, timeout, self.mode)

    def close(self) -> None:
        for pool in self.pools.values():
            pool.release()
        if self.checkouts is not None:
            self.checkouts.close()


def noise_priors(settings: Settings) -> NoisePriors | None:
    """The calibration file of ``--diffperf-noise`` (None: the defaults, measured on cpu)."""
    return read_priors(settings.diffperf_noise) if settings.diffperf_noise is not None else None


def ab_policy(
    tolerances: Tolerances, override: float | None, priors: NoisePriors | None = None, mode: ServerMode = "together"
) -> VerdictPolicy:
    """The profile's tolerances as A/B tolerances (``--diffperf-ab-tolerance`` replaces e2e's, the denoising
    stage's and the step aggregates'); the calibrated priors where given, else the defaults of the server mode."""
    e2e, denoise, agg = tolerances.e2e, tolerances.denoise_stage, tolerances.denoise_agg
    if override is not None:
        e2e = denoise = agg = override
    d = VerdictPolicy() if mode == "together" else one_at_a_time(VerdictPolicy())
    d = d if priors is None else calibrated(d, priors.ab)
    return replace(
        d,
        e2e=replace(d.e2e, tolerance=e2e),
        denoising_stage=replace(d.denoising_stage, tolerance=denoise),
        denoise_agg=replace(d.denoise_agg, tolerance=agg),
        stage=replace(d.stage, tolerance=tolerances.non_denoise_stage),
        load=replace(d.load, tolerance=tolerances.e2e if tolerances.load is None else tolerances.load),
    )


def ab_run(
    settings: Settings,
    baselines: BaselineSet,
    priors: NoisePriors | None,
    launcher: Launcher,
    workdir: Path,
    devices: DeviceShare,
    progress: Callable[[str], None],
    home: Path,
    watch: Watch,
) -> ABRun | None:
    """The run's A/B settings (None without ``--diffperf-base``); ``git=`` sides are checked out (from the
    repository of ``home``, the folder the tests run from) before it returns."""
    if settings.diffperf_base is None:
        if not settings.diffperf_candidate.is_current:
            raise DiffperfError(
                "a candidate SPEC needs a base: add --diffperf-base SPEC", source="--diffperf-candidate"
            )
        return None
    if settings.profile is None:
        raise DiffperfError("A/B runs judge a profile's scenarios: add --diffperf=PROFILE", source="--diffperf-base")
    if settings.regen_baselines or settings.regen_dry_run:
        raise DiffperfError("regeneration measures one build: drop --diffperf-base", source="--diffperf-base")
    tolerances = baselines.profile(settings.profile)
    specs = {"base": settings.diffperf_base, "candidate": settings.diffperf_candidate}
    design = ABDesign(
        request_pairs=settings.diffperf_ab_request_pairs,
        max_process_pairs=settings.diffperf_ab_max_process_pairs,
        max_requests=settings.diffperf_ab_max_requests,
        min_process_pairs=settings.diffperf_ab_min_process_pairs,
    )
    mode = settings.diffperf_ab_servers
    policy = ab_policy(tolerances, settings.diffperf_ab_tolerance, priors, mode)
    checkouts = GitCheckouts(home, progress)
    try:
        built = {side: checkouts.build(specs[side], f"--diffperf-{side}") for side in SIDES}
        sides = {
            side: resolve_side(side, built[side].spec, launcher, f"--diffperf-{side}", built[side].commit)
            for side in SIDES
        }
    except BaseException:
        checkouts.close()
        raise
    pools = {
        side: ServerPool(
            workdir / side,
            settings.diffperf_startup_timeout,
            progress,
            devices.env,
            devices.ports,
            launcher=sides[side].launcher,
            progress_every=settings.diffperf_progress_every,
            before_start=watch.before_start(progress),
        )
        for side in SIDES
    }
    return ABRun(sides, pools, design, policy, mode, checkouts)


def static_policy(settings: Settings, priors: NoisePriors | None = None) -> StaticPolicy | None:
    """How stored-baseline timing checks are judged: with the run's noise (a policy), or by SGLang's rule (None).

    ``auto`` judges with the noise priors where they fit: the runner classes the defaults were
    measured on, or any with calibrated static priors (``--diffperf-noise``).
    """
    mode = settings.diffperf_static_noise
    if mode == "off":
        return None
    hardware = canonical_platform(settings.diffperf_hardware) if settings.diffperf_hardware else None
    calibrated_here = priors is not None and priors.static.given
    if mode == "auto" and hardware not in NOISE_PRIORS_MEASURED_ON and not calibrated_here:
        return None
    policy = StaticPolicy(max_attempts=settings.diffperf_remeasure)
    return policy if priors is None else calibrated_static(policy, priors.static)
