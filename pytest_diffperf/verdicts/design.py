"""The A/B design: which requests run in which order, and when to stop.

A scenario runs on ``k`` fresh pairs of servers (base and candidate side by side), each measuring
``m`` request pairs. Within a process pair the request pairs alternate in a balanced, seeded random
order of ``(base, candidate)`` and ``(candidate, base)``, so neither arm profits from going first
or from a slow phase of the machine. After each process pair the orchestrator analyses what it has
and asks :meth:`ABDesign.decide`: from the second process pair on (``min_process_pairs``: one
pair's offset may be a per-process offset the prior does not cover, as on a machine loaded by
other jobs), stop as soon as the scenario's verdict is decisive, add a process pair while it is
not, and stop with the verdict as it stands (inconclusive) when the next process pair would
exceed the budget.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import DiffperfError
from .rules import CodeArray, decisive
from .vocab import BASE_FIRST, CANDIDATE_FIRST, VERDICTS, Order, StopReason, Verdict


@dataclass(frozen=True)
class Decision:
    """What the orchestrator does after a process pair: stop (and why) or start another."""

    stop: bool
    reason: StopReason | None = None


@dataclass(frozen=True)
class ABDesign:
    """Budget and schedule of one scenario's A/B run; ``max_requests`` counts both arms' measured requests."""

    request_pairs: int = 4
    max_process_pairs: int = 10
    max_requests: int = 80
    min_process_pairs: int = 2  # a verdict is never drawn from one process pair: its offset may be the process's

    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("request_pairs", "max_process_pairs", "max_requests", "min_process_pairs"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise DiffperfError(f"expected an integer >= 1, got {value!r}", source="A/B budget", key=name)
        if self.process_pair_budget < self.min_process_pairs:
            raise DiffperfError(
                f"the budget allows {self.process_pair_budget} process pair(s) of {self.request_pairs} request pairs "
                f"(max_requests {self.max_requests}, max_process_pairs {self.max_process_pairs}), "
                f"fewer than min_process_pairs {self.min_process_pairs}: a verdict needs "
                f"{self.min_process_pairs} process pairs",
                source="A/B budget",
            )

    @property
    def requests_per_process_pair(self) -> int:
        return 2 * self.request_pairs

    @property
    def process_pair_budget(self) -> int:
        """The most process pairs the budget allows."""
        return min(self.max_process_pairs, self.max_requests // self.requests_per_process_pair)

    @property
    def looks(self) -> int:
        """How many times the stop rule may look (after each process pair from the minimum on)."""
        return self.process_pair_budget - self.min_process_pairs + 1

    def _rng(self, process_pair: int) -> random.Random:
        if process_pair < 0:
            raise ValueError(f"process pair index must be >= 0, got {process_pair}")
        return random.Random(f"diffperf-ab:{self.seed}:{process_pair}")

    def orders(self, process_pair: int) -> tuple[Order, ...]:
        """The order of each request pair of a process pair (0-based): balanced, shuffled, seeded.

        With an odd count the extra ``(base, candidate)`` goes to every other process pair, so
        two consecutive process pairs together are exactly balanced.
        """
        m = self.request_pairs
        extra = m % 2 if (process_pair + random.Random(f"diffperf-ab:{self.seed}").randrange(2)) % 2 == 0 else 0
        base_first = m // 2 + extra
        orders = [BASE_FIRST] * base_first + [CANDIDATE_FIRST] * (m - base_first)
        self._rng(process_pair).shuffle(orders)
        return tuple(orders)

    def start_order(self, process_pair: int) -> Order:
        """Which server of a process pair to start first: alternating, from a seeded side."""
        flip = random.Random(f"diffperf-ab-start:{self.seed}").randrange(2)
        return BASE_FIRST if (process_pair + flip) % 2 == 0 else CANDIDATE_FIRST

    def decide(self, process_pairs_done: int, verdict: Verdict) -> Decision:
        """The stop rule after ``process_pairs_done`` process pairs whose analysis gave ``verdict``."""
        if process_pairs_done < 1:
            raise ValueError("decide after at least one process pair")
        if process_pairs_done >= self.min_process_pairs and bool(
            decisive(np.asarray(VERDICTS.index(verdict), dtype=np.int8))
        ):
            return Decision(True, "decisive")
        if process_pairs_done >= self.process_pair_budget:
            return Decision(True, "budget")
        return Decision(False)

    def stop_looks(self, codes: CodeArray) -> tuple[NDArray[np.intp], CodeArray]:
        """The stop rule over many runs at once (the benchmark's path).

        ``codes[..., j]`` is a run's scenario verdict code after ``j + 1`` process pairs (for all
        ``process_pair_budget`` of them); returns the process pairs each run stops after, and its
        verdict code there.
        """
        codes = np.asarray(codes, dtype=np.int8)
        budget = self.process_pair_budget
        if codes.shape[-1] != budget:
            raise ValueError(f"expected {budget} looks on the last axis, got {codes.shape[-1]}")
        allowed = decisive(codes)
        allowed[..., : self.min_process_pairs - 1] = False
        first = np.where(allowed.any(axis=-1), np.argmax(allowed, axis=-1), budget - 1)
        final = np.take_along_axis(codes, first[..., None], axis=-1)[..., 0]
        return first + 1, final
