"""The results model: one outcome from the performance verdict and the consistency status."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pytest_diffperf.results.model import FAILING, OUTCOMES, ScenarioResult, combine, fails_run


@pytest.mark.parametrize(
    ("verdict", "consistency", "outcome"),
    [
        ("pass", None, "pass"),
        ("pass", "pass", "pass"),
        ("pass", "regenerated", "pass"),
        ("pass", "skipped", "pass"),
        ("pass", "fail", "fail"),
        ("fail", "pass", "fail"),
        ("fail", None, "fail"),
        ("error", "fail", "error"),
        ("error", None, "error"),
        ("unguarded", None, "unguarded"),
        ("unguarded", "fail", "fail"),
        ("unjudged", None, "unjudged"),
        ("unjudged", "skipped", "unjudged"),
        ("unjudged", "pass", "pass"),
        ("unjudged", "fail", "fail"),
        ("skipped", None, "skipped"),
        ("skipped", "skipped", "skipped"),
        ("inconclusive", None, "inconclusive"),
        ("inconclusive", "pass", "inconclusive"),
        ("inconclusive", "skipped", "inconclusive"),
        ("inconclusive", "fail", "fail"),
    ],
)
def test_outcome_combines_both_halves(verdict, consistency, outcome):
    assert combine(verdict, consistency) == outcome
    result = ScenarioResult(scenario="s", verdict=verdict, consistency={"status": consistency} if consistency else None)
    assert result.outcome == outcome
    assert result.document()["outcome"] == outcome
    assert (outcome in FAILING) == (outcome in ("fail", "error"))


@pytest.mark.parametrize("outcome", OUTCOMES)
def test_inconclusive_fails_the_run_only_when_the_run_says_so(outcome):
    assert fails_run(outcome, "report") == (outcome in ("fail", "error"))
    assert fails_run(outcome, "fail") == (outcome in ("fail", "error", "inconclusive"))


@pytest.mark.parametrize("verdict", ["FAIL", "failed", "ERROR", "", "regressed"])
def test_unknown_verdicts_are_rejected(verdict):
    with pytest.raises(ValidationError, match="verdict"):
        ScenarioResult(scenario="s", verdict=verdict)


def test_unknown_consistency_status_is_rejected():
    with pytest.raises(ValidationError, match="consistency status must be one of pass, fail, skipped, regenerated"):
        ScenarioResult(scenario="s", verdict="pass", consistency={"status": "ok"})


def test_json_round_trip_keeps_every_field():
    result = ScenarioResult(
        scenario="s",
        verdict="fail",
        checks=[
            {"name": "e2e", "kind": "e2e", "actual": 2.0, "expected": 1.0, "limit": 1.5, "rel": 0.5, "pad": 0.0,
             "verdict": "fail"}
        ],
        measured={"e2e_ms": 2.0},
        message="PERFORMANCE: 1 check(s) failed",
    )  # fmt: skip
    again = ScenarioResult.model_validate_json(result.model_dump_json())
    assert again == result and again.check("e2e") == result.checks[0]
