"""Verdict statistics: the one place that tells a regression from noise.

Pure (numpy, no pytest, no servers): the A/B design and its stop rule (:mod:`.design`), ratio
intervals over process pairs and request pairs (:mod:`.interval`, :mod:`.noise`), the verdict rules
(:mod:`.rules`), per-metric policy (:mod:`.metrics`), A/B analysis (:mod:`.ab`), stage attribution
(:mod:`.attribution`) and the noise-aware static mode (:mod:`.static`). See ``docs/verdicts.md``.
"""

from __future__ import annotations

from .ab import ABResult, MetricResult, ProcessPairSamples, analyse, judge, run
from .attribution import Attribution, StageShare
from .design import ABDesign, Decision
from .metrics import MetricSpec, VerdictPolicy, record_metrics, request_metrics
from .noise import Noise, NoiseEstimate, estimate_noise
from .static import StaticNoise, StaticPolicy, StaticResult, judge_scenario, remeasure, scenario_verdict
from .vocab import STATIC_VERDICTS, VERDICTS, Arm, Order, StaticVerdict, Verdict

__all__ = [
    "STATIC_VERDICTS",
    "VERDICTS",
    "ABDesign",
    "ABResult",
    "Arm",
    "Attribution",
    "Decision",
    "MetricResult",
    "MetricSpec",
    "Noise",
    "NoiseEstimate",
    "Order",
    "ProcessPairSamples",
    "StageShare",
    "StaticNoise",
    "StaticPolicy",
    "StaticResult",
    "StaticVerdict",
    "Verdict",
    "VerdictPolicy",
    "analyse",
    "estimate_noise",
    "judge",
    "judge_scenario",
    "record_metrics",
    "remeasure",
    "request_metrics",
    "run",
    "scenario_verdict",
]
