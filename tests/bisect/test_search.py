"""The bisect search: the middle commit each step, good and bad narrowing, skips as git bisect skip."""

from __future__ import annotations

import pytest

from pytest_diffperf.bisect.search import Search

COMMITS = [f"c{i}" for i in range(2, 9)]  # after the good c1, up to the bad c8


def bisect(first_bad: str, skip: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
    search, tested = Search(list(COMMITS)), []
    while (index := search.next()) is not None:
        commit = COMMITS[index]
        tested.append(commit)
        search.mark(index, "skip" if commit in skip else "bad" if commit >= first_bad else "good")
    return tested, search.suspects()


@pytest.mark.parametrize("first_bad", COMMITS)
def test_eight_commits_take_at_most_three_steps(first_bad):
    tested, suspects = bisect(first_bad)
    assert suspects == [first_bad]
    assert len(tested) <= 3 and "c8" not in tested  # the bad commit is known bad: never run


def test_the_first_step_is_the_middle_and_steps_left_counts_down():
    search = Search(list(COMMITS))
    assert search.steps_left() == 3
    assert COMMITS[search.next() or 0] == "c4"
    search.mark(2, "good")
    assert (search.steps_left(), COMMITS[search.next() or 0]) == (2, "c6")


def test_a_skipped_commit_is_left_out_and_can_stay_a_suspect():
    tested, suspects = bisect("c6", skip=frozenset({"c4"}))
    assert tested == ["c4", "c5", "c6"] and suspects == ["c6"]  # the next nearest the middle instead; c5 good
    tested, suspects = bisect("c5", skip=frozenset({"c4"}))
    assert suspects == ["c4", "c5"]  # c3 good, c5 bad, c4 skipped: either may be the first bad


def test_marks_outside_the_open_interval_and_an_empty_range_are_refused():
    search = Search(["only"])
    assert search.next() is None and search.suspects() == ["only"]
    with pytest.raises(ValueError, match="not between"):
        search.mark(0, "good")
    with pytest.raises(ValueError, match="nothing to search"):
        Search([])
