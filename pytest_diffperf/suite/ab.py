"""The verdict settings of a run: A/B against a base build, static mode's noise and re-measures, inconclusive.

Read once from the options (one ``DiffperfError`` per bad value, before any server starts) and
kept on the session: :class:`ABRun` owns one server pool per side for the whole run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, TypeVar, get_args

from ..cases import Case
from ..errors import DiffperfError
from ..platforms import canonical_platform
from ..serving.ab import SERVER_MODES, SIDES, ABServers, ServerMode, Side, SideServer, resolve_side
from ..serving.launchers import Launcher, ServerSpec
from ..serving.pool import ServerPool
from ..serving.sidespec import parse_side_spec
from ..sharding.devices import DeviceShare
from ..verdicts.design import ABDesign
from ..verdicts.metrics import VerdictPolicy
from ..verdicts.static import StaticPolicy
from .options import Settings

InconclusiveMode = Literal["report", "fail"]
NoiseMode = Literal["auto", "on", "off"]
C = TypeVar("C", bound=str)
NOISE_PRIORS_MEASURED_ON = frozenset({"cpu"})  # the runner classes the default priors were measured on


@dataclass
class ABRun:
    """A/B settings and one server pool per side, shared by every scenario of the run."""

    sides: dict[Side, SideServer]
    pools: dict[Side, ServerPool]
    design: ABDesign
    policy: VerdictPolicy
    mode: ServerMode

    def servers(self, case: Case, spec: ServerSpec, timeout: float) -> ABServers:
        return ABServers(self.sides, self.pools, case, spec, timeout, self.mode)

    def close(self) -> None:
        for pool in self.pools.values():
            pool.release()


def ab_run(
    settings: Settings,
    launcher: Launcher,
    workdir: Path,
    devices: DeviceShare,
    progress: Callable[[str], None],
) -> ABRun | None:
    """The run's A/B settings (None without ``--diffperf-base``)."""
    if settings.diffperf_base is None:
        if settings.diffperf_candidate.strip() != "current":
            raise DiffperfError(
                "a candidate SPEC needs a base: add --diffperf-base SPEC", source="--diffperf-candidate"
            )
        return None
    if settings.profile is None:
        raise DiffperfError("A/B runs judge a profile's scenarios: add --diffperf=PROFILE", source="--diffperf-base")
    if settings.regen_baselines or settings.regen_dry_run:
        raise DiffperfError("regeneration measures one build: drop --diffperf-base", source="--diffperf-base")
    texts = {"base": settings.diffperf_base, "candidate": settings.diffperf_candidate}
    sides = {
        side: resolve_side(side, parse_side_spec(texts[side], f"--diffperf-{side}"), launcher, f"--diffperf-{side}")
        for side in SIDES
    }
    design = ABDesign(
        request_pairs=_count(settings.diffperf_ab_request_pairs, "--diffperf-ab-request-pairs"),
        max_process_pairs=_count(settings.diffperf_ab_max_process_pairs, "--diffperf-ab-max-process-pairs"),
        max_requests=_count(settings.diffperf_ab_max_requests, "--diffperf-ab-max-requests"),
    )
    tolerance = _fraction(settings.diffperf_ab_tolerance, "--diffperf-ab-tolerance")
    default = VerdictPolicy()
    policy = replace(
        default,
        e2e=replace(default.e2e, tolerance=tolerance),
        denoising_stage=replace(default.denoising_stage, tolerance=tolerance),
        denoise_agg=replace(default.denoise_agg, tolerance=tolerance),
    )
    mode = _choice(settings.diffperf_ab_servers, SERVER_MODES, "--diffperf-ab-servers")
    pools = {
        side: ServerPool(
            workdir / side,
            settings.diffperf_startup_timeout,
            progress,
            devices.env,
            devices.ports,
            launcher=sides[side].launcher,
        )
        for side in SIDES
    }
    return ABRun(sides, pools, design, policy, mode)


def inconclusive_mode(settings: Settings) -> InconclusiveMode:
    return _choice(settings.diffperf_inconclusive, get_args(InconclusiveMode), "--diffperf-inconclusive")


def static_policy(settings: Settings) -> StaticPolicy | None:
    """How stored-baseline timing checks are judged: with the run's noise (a policy), or by SGLang's rule (None).

    ``auto`` judges with the noise priors only on the runner classes they were measured on.
    """
    mode = _choice(settings.diffperf_static_noise, get_args(NoiseMode), "--diffperf-static-noise")
    attempts = _count(settings.diffperf_remeasure, "--diffperf-remeasure")
    if mode == "off":
        return None
    hardware = canonical_platform(settings.diffperf_hardware) if settings.diffperf_hardware else None
    if mode == "auto" and hardware not in NOISE_PRIORS_MEASURED_ON:
        return None
    return StaticPolicy(max_attempts=attempts)


def _count(raw: str, flag: str) -> int:
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise DiffperfError(f"expected an integer >= 1, got {raw!r}", source=flag)
    return value


def _fraction(raw: str, flag: str) -> float:
    """``10%`` or ``0.1``: a fraction > 0."""
    text = str(raw).strip()
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise DiffperfError(f"expected a fraction > 0 such as 0.1 or 10%, got {raw!r}", source=flag)
    return value


def _choice(raw: str, choices: tuple[C, ...], flag: str) -> C:
    value = str(raw).strip().lower()
    for choice in choices:
        if value == choice:
            return choice
    raise DiffperfError(f"expected one of {', '.join(choices)}, got {raw!r}", source=flag)
