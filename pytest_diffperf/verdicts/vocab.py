"""The vocabularies of verdicts, A/B sides and request orders."""

from __future__ import annotations

from typing import Literal, get_args

Verdict = Literal["regressed", "improved", "unchanged", "inconclusive"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)  # index = the verdict code of the vectorised functions
REGRESSED, IMPROVED, UNCHANGED, INCONCLUSIVE = range(4)

StaticVerdict = Literal["pass", "fail", "inconclusive"]
STATIC_VERDICTS: tuple[StaticVerdict, ...] = get_args(StaticVerdict)

Side = Literal["base", "candidate"]  # an A/B run's two builds (serving starts them, results records them)
Order = tuple[Side, Side]  # which side goes first
SIDES: Order = ("base", "candidate")
BASE_FIRST: Order = ("base", "candidate")
CANDIDATE_FIRST: Order = ("candidate", "base")

StopReason = Literal["decisive", "budget"]
