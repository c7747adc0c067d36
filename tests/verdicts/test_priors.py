"""Calibrated noise priors (``--diffperf-noise``): the file, its errors, and what it replaces."""

from __future__ import annotations

import json

import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.verdicts.metrics import VerdictPolicy
from pytest_diffperf.verdicts.priors import calibrated, calibrated_static, read_priors
from pytest_diffperf.verdicts.static import StaticPolicy


def test_given_priors_replace_the_defaults_and_the_rest_stays(write):
    path = write(
        "noise.json",
        {"ab": {"e2e": {"between": 0.01, "within": 0.03}, "load": {"between": 0.05, "within": 0}},
         "static": {"e2e": {"baseline": 0.03, "process": 0.02, "within": 0.04, "process_weight": 4}}},
    )  # fmt: skip
    priors = read_priors(path)
    policy = calibrated(VerdictPolicy(), priors.ab)
    default = VerdictPolicy()
    assert (policy.e2e.noise.between, policy.e2e.noise.within) == (0.01, 0.03)
    assert policy.e2e.tolerance == default.e2e.tolerance and policy.e2e.weight == default.e2e.weight
    assert policy.load.noise.between == 0.05
    assert policy.denoising_stage == default.denoising_stage
    static = calibrated_static(StaticPolicy(max_attempts=2), priors.static)
    assert (static.e2e.baseline, static.e2e.process, static.e2e.within, static.e2e.process_weight) == (
        0.03,
        0.02,
        0.04,
        4,
    )
    assert static.denoise == StaticPolicy().denoise and static.max_attempts == 2
    assert priors.static.given and not read_priors(write("ab-only.json", {"ab": {}})).static.given


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"ab": {"e2e": {"between": -0.1, "within": 0.1}}},
            "ab.e2e.between: expected a number greater than or equal to 0",
        ),
        ({"ab": {"e2e": {"between": 0.1}}}, "ab.e2e.within: required key is missing"),
        ({"ab": {"decode": {"between": 0.1, "within": 0.1}}}, "ab.decode: unknown key"),
        (
            {"static": {"e2e": {"baseline": "0.1", "process": 0.1, "within": 0.1}}},
            "static.e2e.baseline: expected a valid number",
        ),
        ({"abb": {}}, "abb: unknown key"),
    ],
)
def test_errors_name_the_file_and_the_key(write, data, message):
    path = write("noise.json", data)
    with pytest.raises(DiffperfError) as info:
        read_priors(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


def test_a_file_that_is_not_json(write):
    path = write("noise.json", "{not json")
    with pytest.raises(DiffperfError, match="invalid JSON"):
        read_priors(path)
    assert json.loads('{"ab": {}}')  # the smallest valid file
    assert read_priors(write("empty.json", {})).ab.e2e is None
