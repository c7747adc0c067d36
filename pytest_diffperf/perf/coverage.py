"""Baselines and cases that do not meet: scenarios without a case and cases without a baseline.

One function for every path that lists them (the pytest run's report, ``diffperf import-cases
--baselines``): given the baseline set, the cases and the scenarios in question (those a run
selected), which of them lack the other half. Like syrupy's unused-snapshot report, what is not
selected (``-k``, another shard) is not reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..cases import Case, unmatched
from .baselines import BaselineSet


@dataclass(frozen=True)
class Unmatched:
    no_case: list[str]  # scenarios of the baseline files without a case: each fails, naming the case to add
    no_baseline: list[str]  # cases without a baseline scenario: each fails, printing the baseline to add

    def __bool__(self) -> bool:
        return bool(self.no_case or self.no_baseline)

    def lines(self, baselines: str, cases: str | None) -> list[str]:
        """The report, one line per kind ('' kinds left out); ``baselines``/``cases`` name the files."""
        out = []
        if self.no_case:
            where = cases or "a case file (--diffperf-cases)"
            out.append(
                f"{len(self.no_case)} scenario(s) of {baselines} without a case in {where} (they fail): "
                + ", ".join(self.no_case)
            )
        if self.no_baseline:
            out.append(
                f"{len(self.no_baseline)} case(s) of {cases} without a baseline in {baselines} (they fail; "
                "pytest --regen-baselines -k ID writes one): " + ", ".join(self.no_baseline)
            )
        return out


def unmatched_scenarios(baselines: BaselineSet, cases: Mapping[str, Case], selected: Iterable[str]) -> Unmatched:
    """Of the ``selected`` scenario ids, those without a case and those without a baseline, in order."""
    ids = list(dict.fromkeys(selected))
    no_case, no_baseline = unmatched([s for s in ids if s in cases], [s for s in ids if s in baselines.scenarios])
    return Unmatched(no_case, no_baseline)
