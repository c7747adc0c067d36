"""What one scenario produced, as the results file stores it: typed verdicts and one overall outcome.

The performance verdict and the consistency status are judged separately; ``outcome`` combines
them into the one word the summary table, JUnit, ``diffperf merge`` and every exit code use.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..consistency.result import Status as ConsistencyStatus
from ..perf.limits import CheckKind, CheckVerdict

RESULTS_VERSION = 2  # 2: "case" became "scenario"; every scenario carries its outcome

# The performance verdict of a scenario.
ScenarioVerdict = Literal["pass", "fail", "unguarded", "unjudged", "error", "skipped"]
# Performance and consistency together; "fail" and "error" fail the run.
Outcome = Literal["pass", "fail", "error", "skipped", "unguarded", "unjudged"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
FAILING: frozenset[Outcome] = frozenset({"fail", "error"})


def combine(verdict: ScenarioVerdict, consistency: ConsistencyStatus | None) -> Outcome:
    """The overall outcome of a performance verdict and a consistency status (None: not compared)."""
    compared = consistency not in (None, "skipped")
    if verdict == "error":
        return "error"
    if verdict == "fail" or consistency == "failed":
        return "fail"
    if verdict in ("skipped", "unjudged") and not compared:
        return verdict
    return "unguarded" if verdict == "unguarded" else "pass"


class CheckRecord(BaseModel):
    """One check of the limit engine, as judged."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: CheckKind
    actual: float | None
    expected: float
    limit: float
    rel: float
    pad: float
    verdict: CheckVerdict


class ScenarioResult(BaseModel):
    """One scenario: its per-request rows, every check, its verdicts and the server that ran it."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    scenario: str
    verdict: ScenarioVerdict
    rows: list[dict[str, Any]] = Field(default_factory=list)
    checks: list[CheckRecord] = Field(default_factory=list)
    measured: dict[str, float] = Field(default_factory=dict)  # judged values: the statistic over the requests
    message: str = ""
    server: dict[str, Any] | None = None  # pid, port, load_ms and log of the server that ran it
    consistency: dict[str, Any] | None = None  # the output-vs-ground-truth result, when compared

    @field_validator("consistency")
    @classmethod
    def _known_status(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        statuses = get_args(ConsistencyStatus)
        if value is not None and value.get("status") not in statuses:
            raise ValueError(f"consistency status must be one of {', '.join(statuses)}, got {value.get('status')!r}")
        return value

    @property
    def consistency_status(self) -> ConsistencyStatus | None:
        return self.consistency["status"] if self.consistency else None

    @property
    def outcome(self) -> Outcome:
        return combine(self.verdict, self.consistency_status)

    def document(self) -> dict[str, Any]:
        """The results-file form: every field, and the outcome."""
        return {**self.model_dump(), "outcome": self.outcome}

    def check(self, name: str) -> CheckRecord | None:
        return next((c for c in self.checks if c.name == name), None)

    def worst(self) -> CheckRecord | None:
        """The check closest to (or furthest over) its limit."""
        judged = [c for c in self.checks if c.actual is not None and c.limit]
        return max(judged, key=lambda c: (c.actual or 0) / c.limit, default=None)
