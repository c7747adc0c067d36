"""The verdict settings of a run: A/B against a base build, static mode's noise and re-measures, inconclusive.

Built once from the parsed settings (a combination that does not hold is one ``DiffperfError``,
before any server starts) and kept on the session: :class:`ABRun` owns the servers' pools (one per side and
slot) for the whole run and each server group's process pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from ..cases import Case
from ..errors import DiffperfError
from ..judging.abscenario import GroupAB
from ..perf.baselines import BaselineSet
from ..perf.schema import Tolerances
from ..platforms import Platform
from ..results.provenance import CPU_LAUNCHERS
from ..serving.abservers import ABServers, ServerMode, SideServer, resolve_side
from ..serving.gitside import GitCheckouts
from ..serving.interference import Watch
from ..serving.launchers import Launcher, ServerSpec
from ..serving.pool import ServerPool
from ..sharding.devices import DeviceShare
from ..verdicts.design import ABDesign
from ..verdicts.metrics import VerdictPolicy, one_at_a_time
from ..verdicts.priors import NoisePriors, calibrated, calibrated_static, read_priors
from ..verdicts.static import StaticPolicy
from ..verdicts.vocab import SIDES, Side
from .options import PairSharing, Settings

# process pairs started ahead by default, at most: on a CPU a batch of 4 pairs (8 servers) loading together before
# any measures; with devices apart, 3 more loading beside the one measuring (each on devices of its own)
MAX_AHEAD = 3
NOISE_PRIORS_MEASURED_ON = frozenset({"cpu"})  # the runner classes the default priors were measured on


@dataclass
class ABRun:
    """A/B settings, the servers' pools (one per side and slot, shared by every scenario of the run) and each
    server group's process pairs (:class:`~pytest_diffperf.judging.abscenario.GroupAB`)."""

    sides: dict[Side, SideServer]
    pool: Callable[[int, Side], ServerPool]  # a new pool for a slot and side
    design: ABDesign
    policy: VerdictPolicy
    mode: ServerMode
    devices: DeviceShare
    sharing: PairSharing = "group"
    prestart: int | None = None  # process pairs started ahead of the one measuring; None: auto
    cpu: bool = False  # the launcher's servers run on the CPU (auto prestarts)
    checkouts: GitCheckouts | None = None  # the git= sides' worktrees, removed at close
    watch: Watch | None = None  # what outside processes take while each process pair measures
    progress: Callable[[str], None] = lambda _msg: None
    pools: dict[tuple[int, Side], ServerPool] = field(default_factory=dict)
    groups: dict[str, GroupAB] = field(default_factory=dict)

    def group(self, key: str, spec: ServerSpec, members: Sequence[tuple[str, Case, float]]) -> GroupAB:
        """The process pairs of server group ``key`` and its scenarios ``members`` (made by the first of them)."""
        if key not in self.groups:
            ahead = self.ahead(spec.num_gpus)
            slots = ahead + 1
            pools = [{side: self._pool(slot, side) for side in SIDES} for slot in range(slots)]
            servers = ABServers(self.sides, pools, spec, self.mode, self.progress)
            separate = self.devices.slots(spec.num_gpus) >= slots
            self.groups[key] = GroupAB(key, servers, self.design, self.policy, ahead, separate, self.watch)
            for member in members:
                self.groups[key].add(*member)
        return self.groups[key]

    def ahead(self, num_gpus: int) -> int:
        """How many process pairs may start ahead of the one measuring: ``--diffperf-ab-prestart``, or (auto) as
        many as the devices hold apart beside it, else ``MAX_AHEAD`` on the CPU, none one at a time (never more than
        ``MAX_AHEAD``). A group starts only as many as its scenarios are projected to need."""
        if self.mode != "together":
            return 0
        if self.prestart is not None:
            return self.prestart
        apart = self.devices.slots(num_gpus) - 1
        return min(apart, MAX_AHEAD) if apart >= 1 else MAX_AHEAD if self.cpu else 0

    def _pool(self, slot: int, side: Side) -> ServerPool:
        if (slot, side) not in self.pools:
            self.pools[slot, side] = self.pool(slot, side)
        return self.pools[slot, side]

    def close(self) -> None:
        for group in self.groups.values():
            group.close()
        for pool in self.pools.values():
            pool.release()
        if self.checkouts is not None:
            self.checkouts.close()


def noise_priors(settings: Settings) -> NoisePriors | None:
    """The calibration file of ``--diffperf-noise`` (None: the defaults, measured on cpu)."""
    return read_priors(settings.diffperf_noise) if settings.diffperf_noise is not None else None


def priors_line(priors: NoisePriors | None, path: Path | None, launcher: str, platform: Platform | None) -> str:
    """The header's line naming the noise priors in force, or saying that none fit this platform and how to fix it."""
    if priors is not None and path is not None:
        return f"diffperf: noise priors: {priors.describe(path)}"
    if launcher in CPU_LAUNCHERS and platform in NOISE_PRIORS_MEASURED_ON:
        return f"diffperf: noise priors: built in (the {launcher} server on {platform})"
    return (
        f"diffperf: note: no noise calibration for {launcher} on {platform or 'this platform'} (the built-in priors "
        "are the reference server's on cpu): diffperf calibrate --ab AA.json --history DIR -o noise.json, then "
        "--diffperf-noise noise.json"
    )


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
    check_budget(settings)
    design = ABDesign(
        request_pairs=settings.diffperf_ab_request_pairs,
        max_process_pairs=settings.diffperf_ab_max_process_pairs,
        max_requests=settings.diffperf_ab_max_requests,
        min_process_pairs=settings.diffperf_ab_min_process_pairs,
    )
    mode = settings.diffperf_ab_servers
    policy = ab_policy(tolerances, settings.diffperf_ab_tolerance, priors, mode)
    sharing, prestart = settings.diffperf_ab_pairs, settings.diffperf_ab_prestart
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

    def pool(slot: int, side: Side) -> ServerPool:
        """Slot 0's servers use the first devices of the share; a later slot's the next, where the share holds them."""
        slot_env = partial(devices.env, slot=slot)
        return ServerPool(
            workdir / (side if slot == 0 else f"{side}-{slot + 1}"),
            settings.diffperf_startup_timeout,
            progress,
            slot_env,
            devices.ports,
            launcher=sides[side].launcher,
            progress_every=settings.diffperf_progress_every,
            before_start=replace(watch, device_env=slot_env).before_start(progress),
            on_ready=watch.adopt,
        )

    cpu = launcher.name in CPU_LAUNCHERS
    return ABRun(sides, pool, design, policy, mode, devices, sharing, prestart, cpu, checkouts, watch, progress)


def check_budget(settings: Settings) -> None:
    """DiffperfError naming the option that leaves A/B fewer process pairs than a verdict needs."""
    pairs, least = settings.diffperf_ab_request_pairs, settings.diffperf_ab_min_process_pairs
    needed = 2 * pairs * least
    if settings.diffperf_ab_max_requests < needed:
        raise DiffperfError(
            f"expected at least {needed} requests ({least} process pairs, --diffperf-ab-min-process-pairs, of "
            f"{pairs} request pairs, --diffperf-ab-request-pairs, both sides), got {settings.diffperf_ab_max_requests}",
            source="--diffperf-ab-max-requests",
        )
    if settings.diffperf_ab_max_process_pairs < least:
        raise DiffperfError(
            f"expected at least --diffperf-ab-min-process-pairs ({least}), got {settings.diffperf_ab_max_process_pairs}",
            source="--diffperf-ab-max-process-pairs",
        )


def static_policy(settings: Settings, priors: NoisePriors | None = None) -> StaticPolicy | None:
    """How stored-baseline timing checks are judged: with the run's noise (a policy), or by SGLang's rule (None).

    ``auto`` judges with the noise priors where they fit: the runner classes the defaults were
    measured on, or any with calibrated static priors (``--diffperf-noise``).
    """
    mode = settings.diffperf_static_noise
    if mode == "off":
        return None
    hardware = settings.diffperf_hardware
    calibrated_here = priors is not None and priors.static.given
    if mode == "auto" and hardware not in NOISE_PRIORS_MEASURED_ON and not calibrated_here:
        return None
    policy = StaticPolicy(max_attempts=settings.diffperf_remeasure)
    return policy if priors is None else calibrated_static(policy, priors.static)
