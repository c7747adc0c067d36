"""Noise priors calibrated for a runner class (``--diffperf-noise FILE``), and how they replace the defaults.

The file holds what an A/A run on that runner class measured (``NoiseEstimate`` per metric: the
``between`` and ``within`` of each metric in an A/B results file), rounded up, for A/B, and what a
history of static runs measured, for static mode::

    {"ab": {"e2e": {"between": 0.01, "within": 0.03}, "denoising_stage": {"between": 0.01, "within": 0.03},
            "denoise_agg": {...}, "stage": {...}, "load": {"between": 0.05, "within": 0}},
     "static": {"e2e": {"baseline": 0.03, "process": 0.02, "within": 0.03}, "denoise": {...}, "stage": {...},
                "load": {...}},
     "calibration": {"runner_class": "cpu-2core", "created": "2026-12-05T18:00:00+00:00", "ab": {...},
                     "static": {...}, "figures": {"ab.e2e.between": {"measured": 0.012, "scenario": "..."}}}}

``diffperf calibrate`` writes it (``calibration`` says from what, with its confidence). Every key
is optional; what the file leaves out keeps its default. Weights are the priors'
(``between_weight``, ``within_weight``, ``process_weight``), default as in :class:`.noise.Noise`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._util.jsonfile import read_json_object, validate
from .metrics import VerdictPolicy
from .noise import Noise
from .static import StaticNoise, StaticPolicy

MAX_SD = 1.0  # a relative sd of about 170 %: noisier than that, no verdict is worth its time
MAX_WEIGHT = 1000.0

Sd = Annotated[float, Field(ge=0, le=MAX_SD)]  # natural-log units, about a relative sd
Weight = Annotated[float, Field(gt=0, le=MAX_WEIGHT)]  # pseudo-observations: 0 ignores the prior, 1e300 is all prior


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class ABPrior(_Strict):
    between: Sd
    within: Sd
    between_weight: Weight = 8.0
    within_weight: Weight = 20.0

    @model_validator(mode="after")
    def _some_noise(self) -> ABPrior:
        if self.between == 0 and self.within == 0:
            raise ValueError("between and within are both 0: a prior of no noise makes every change decisive")
        return self

    def noise(self) -> Noise:
        return Noise(self.between, self.within, self.between_weight, self.within_weight)


class StaticPrior(_Strict):
    baseline: Sd
    process: Sd
    within: Sd
    process_weight: Weight = 8.0
    within_weight: Weight = 20.0

    @model_validator(mode="after")
    def _some_noise(self) -> StaticPrior:
        if self.baseline == 0 and self.process == 0 and self.within == 0:
            raise ValueError("baseline, process and within are all 0: a prior of no noise makes every check decisive")
        return self

    def noise(self) -> StaticNoise:
        return StaticNoise(self.baseline, self.process, self.within, self.process_weight, self.within_weight)


class ABPriors(_Strict):
    e2e: ABPrior | None = None
    denoising_stage: ABPrior | None = None
    denoise_agg: ABPrior | None = None
    stage: ABPrior | None = None
    load: ABPrior | None = None


class StaticPriors(_Strict):
    e2e: StaticPrior | None = None
    denoise: StaticPrior | None = None
    stage: StaticPrior | None = None
    load: StaticPrior | None = None

    @property
    def given(self) -> bool:
        return any(getattr(self, name) is not None for name in ("e2e", "denoise", "stage", "load"))


class ABSource(_Strict):
    """The A/A run the ``ab`` priors came from: its results files, scenarios, and how many pairs."""

    results: list[str]
    scenarios: list[str]
    process_pairs: Annotated[int, Field(ge=2)]  # the fewest any scenario measured
    request_pairs: Annotated[int, Field(ge=2)]  # every scenario's together
    interference: list[str] = Field(default_factory=list)  # each results file's interference line (load, others' CPU)


class StaticSource(_Strict):
    """The history the ``static`` priors came from: its folder, scenarios, runs and days."""

    history: str
    scenarios: list[str]
    runs: Annotated[int, Field(ge=1)]
    days: Annotated[int, Field(ge=1)]
    first: str  # the first and last day (YYYY-MM-DD)
    last: str


class Figure(_Strict):
    """One prior's figure as measured, before rounding up, and the scenario that gave it (the largest)."""

    measured: Annotated[float, Field(ge=0)]
    scenario: str


class Calibration(_Strict):
    """Where a calibration file came from: its runner class, when, and the runs it was measured on."""

    runner_class: Annotated[str, Field(min_length=1)]
    created: str  # ISO 8601, UTC
    hardware: str | None = None
    device: str | None = None
    ab: ABSource | None = None
    static: StaticSource | None = None
    busy: list[str] = Field(default_factory=list)  # scenarios kept though measured busy (--include-busy)
    note: str | None = None  # how the runs were made (--note): the command, the machine
    figures: dict[str, Figure] = Field(default_factory=dict)  # "ab.e2e.between", "static.e2e.baseline", ...


class NoisePriors(_Strict):
    """A calibration file: priors for A/B, for static mode, or both, and where they came from."""

    ab: ABPriors = Field(default_factory=ABPriors)
    static: StaticPriors = Field(default_factory=StaticPriors)
    calibration: Calibration | None = None

    def describe(self, path: Path) -> str:
        """``FILE (runner class X, calibrated 2026-12-05)``: the priors in force, for a run's header."""
        if self.calibration is None:
            return f"{path} (written by hand: no calibration block)"
        return f"{path} (runner class {self.calibration.runner_class}, calibrated {self.calibration.created[:10]})"


def read_priors(path: Path) -> NoisePriors:
    """A calibration file; one ``DiffperfError`` naming the file and the key per problem."""
    return validate(NoisePriors, read_json_object(path), path, "")


def calibrated(policy: VerdictPolicy, priors: ABPriors) -> VerdictPolicy:
    """``policy`` with the file's A/B priors (tolerances, gates and weights of the budget kept)."""
    changes = {
        name: replace(getattr(policy, name), noise=prior.noise())
        for name in ("e2e", "denoising_stage", "denoise_agg", "stage", "load")
        if (prior := getattr(priors, name)) is not None
    }
    return replace(policy, **changes)


def calibrated_static(policy: StaticPolicy, priors: StaticPriors) -> StaticPolicy:
    """``policy`` with the file's static priors."""
    changes = {
        name: prior.noise()
        for name in ("e2e", "denoise", "stage", "load")
        if (prior := getattr(priors, name)) is not None
    }
    return replace(policy, **changes)
