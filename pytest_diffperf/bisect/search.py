"""The search of ``diffperf bisect`` over the commits after a good one up to a bad one (pure).

The commits are oldest first, the last the known-bad one. Each step tests the untested commit
nearest the middle of the interval still open; ``good`` moves the interval's start past it,
``bad`` its end to it, ``skip`` (inconclusive twice) leaves it out, as ``git bisect skip`` does:
when only skipped commits remain between the last good and the first bad commit, the first bad
one is any of them or that bad commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Mark = Literal["good", "bad", "skip"]


@dataclass
class Search:
    commits: list[str]  # after the good commit, up to the bad one (included, last), oldest first
    good: int = -1  # the last good commit's index (-1: the given good commit)
    bad: int = field(init=False)  # the first bad commit's index known so far
    skipped: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        if not self.commits:
            raise ValueError("nothing to search: no commit after the good one")
        self.bad = len(self.commits) - 1

    def next(self) -> int | None:
        """The commit to test next (None: the search is over)."""
        open_ = [i for i in range(self.good + 1, self.bad) if i not in self.skipped]
        middle = (self.good + self.bad) / 2
        return min(open_, key=lambda i: (abs(i - middle), i)) if open_ else None

    def mark(self, index: int, mark: Mark) -> None:
        if not self.good < index < self.bad:
            raise ValueError(f"commit {index} is not between the last good ({self.good}) and first bad ({self.bad})")
        if mark == "good":
            self.good = index
        elif mark == "bad":
            self.bad = index
        else:
            self.skipped.add(index)

    def suspects(self) -> list[str]:
        """The commits the first bad one may be: the first bad alone, or with the skipped ones before it."""
        return [self.commits[i] for i in range(self.good + 1, self.bad + 1) if i in self.skipped or i == self.bad]

    def steps_left(self) -> int:
        """How many steps remain at most without skips: ceil(log2(n + 1)) for n open commits."""
        open_ = sum(1 for i in range(self.good + 1, self.bad) if i not in self.skipped)
        return open_.bit_length()
