"""The slowdown a busy machine explains (verdicts.busybound): the fair-share contention, capped by the CPU time, net
of the wait a baseline recorded on a loaded machine holds already."""

from __future__ import annotations

import pytest

from pytest_diffperf.verdicts.busybound import (
    CPU_GROWTH_CAP,
    beyond,
    contention,
    cpu_delay_ms,
    cpu_growth,
    explained,
    peak_contention,
    stretch,
    stretch_and_wait,
)


@pytest.mark.parametrize(
    ("load", "cpus", "factor"),
    [(0.3, 2, 1.0), (2.0, 2, 1.0), (3.0, 2, 1.5), (6.0, 2, 3.0), (12.0, 8, 1.5), (float("nan"), 2, 1.0), (4.0, 0, 1.0)],
)
def test_contention_is_the_runnable_threads_per_cpu_and_never_below_one(load, cpus, factor):
    assert contention(load, cpus) == factor


def test_the_peak_contention_is_the_busiest_window_s():
    assert peak_contention([(1.0, 2), (5.0, 2), (3.0, 2)]) == 2.5
    assert peak_contention([]) == 1.0


def test_the_delay_is_the_median_request_s_cpu_time_stretched_by_the_contention():
    assert cpu_delay_ms([100.0, 300.0, 200.0, None], 2.5) == pytest.approx(300.0)
    assert cpu_delay_ms([None, None], 2.5) is None
    assert cpu_delay_ms([], 2.5) is None


def test_a_cpu_bound_request_is_explained_up_to_the_whole_contention():
    # 100 ms of CPU alone, at contention 3: 300 ms measured, 200 ms of it waiting; all of it the load's
    assert explained(300.0, cpu_delay_ms([100.0], 3.0), 3.0) == 3.0


def test_a_request_mostly_asleep_is_explained_only_for_its_cpu_time():
    # 100 ms of CPU stretched to 300 ms plus an injected 700 ms sleep: 1000 ms, of which at most 200 ms waiting
    assert explained(1000.0, cpu_delay_ms([100.0], 3.0), 3.0) == pytest.approx(1000 / 800)


def test_without_the_cpu_time_or_with_more_delay_than_wall_the_contention_is_the_bound():
    assert explained(1000.0, None, 2.0) == 2.0
    assert explained(None, 50.0, 2.0) == 2.0
    assert explained(100.0, 150.0, 2.0) == 2.0
    assert explained(100.0, 0.0, 1.0) == 1.0  # a quiet machine explains nothing


@pytest.mark.parametrize(
    ("low", "limit", "bound", "fails"),
    [(250.0, 110.0, 2.0, True), (220.0, 110.0, 2.0, False), (219.0, 110.0, 2.0, False), (None, 110.0, 1.0, False)],
)
def test_a_check_fails_only_when_its_lower_end_lies_beyond_the_limit_times_the_bound(low, limit, bound, fails):
    assert beyond(low, limit, bound) is fails


def test_the_measured_wait_and_stretch_are_the_median_request_s():
    # stretches 3, 2 and 5, waits 200, 150 and 400 ms: the medians; the load average unused
    assert stretch_and_wait([(100.0, 200.0), (150.0, 150.0), (100.0, 400.0)], [(40.0, 2)]) == (3.0, 200.0)
    assert stretch_and_wait([(0.0, 5.0)], []) == (1.0, 5.0)  # no CPU time read: no stretch, the wait still counts


def test_without_a_measured_wait_the_load_average_estimates_it():
    # load 6 on 2 CPUs: stretch 3, a wait of twice the median request's CPU time
    assert stretch_and_wait([(100.0, None), (120.0, None), (80.0, None)], [(6.0, 2), (4.0, 2)]) == (3.0, 200.0)
    assert stretch_and_wait([(None, None)], [(6.0, 2)]) == (3.0, None)


def test_a_baseline_s_own_wait_is_not_allowed_twice():
    """docs/benchmarks.md's x2 beside one burner: the run's median request waited 500 ms in 180 ms of CPU time for an
    e2e of 1020 ms; the baseline's request (e2e 509 ms, limit 560) had waited 300 ms in 180 ms already."""
    run = [(180.0, 500.0)]
    factor, delay = stretch_and_wait(run, [])
    assert explained(1020.0, delay, factor) == pytest.approx(1020 / 520)  # x1.96: 560 x 1.96 = 1098, within
    factor, delay = stretch_and_wait(run, [], own_wait_ms=300.0)
    assert (factor, delay) == (pytest.approx(stretch(180.0, 500.0)), 200.0)  # the run's stretch, the wait beyond
    bound = explained(1020.0, delay, factor)
    assert bound == pytest.approx(1020 / 820)  # only the 200 ms of wait beyond the baseline's own: x1.24
    assert beyond(1020.0, 560.0, bound)


def test_a_run_that_waited_no_more_than_its_baseline_is_explained_nothing():
    factor, delay = stretch_and_wait([(100.0, 150.0), (100.0, 250.0)], [(9.0, 2)], own_wait_ms=300.0)
    assert (factor, delay) == (3.0, 0.0)  # the run's stretch; no wait beyond the baseline's
    assert explained(900.0, delay, factor) == 1.0


def test_cpu_time_grown_under_contention_is_no_fail_of_unchanged_code():
    """bench_busy beside two burners, no change: the baseline's request took 170 ms of CPU and waited 88 ms (e2e
    237 ms, limit 261); the run's median 200 ms of CPU (the same work, slower per instruction) waiting 262 ms, e2e
    402 ms. Dividing the run's stretch by the baseline's allowed x1.52: 261 x 1.52 = 396, a fail of no change."""
    factor, delay = stretch_and_wait([(200.0, 262.0)], [], own_wait_ms=88.0)
    bound = explained(402.0, delay, factor)
    assert bound == pytest.approx(402 / (402 - 174))  # x1.76: only the wait beyond the baseline's is allowed
    assert not beyond(402.0, 261.0, bound)


def test_a_baseline_without_its_wait_is_bounded_as_before():
    run = [(100.0, 200.0), (150.0, 150.0), (100.0, 400.0)]
    assert stretch_and_wait(run, [(40.0, 2)], own_wait_ms=None) == stretch_and_wait(run, [(40.0, 2)]) == (3.0, 200.0)


def test_a_wait_estimated_from_the_load_is_allowed_whole():
    # the run's waits not read (no schedstat): the baseline's measured wait is not netted from an estimate
    assert stretch_and_wait([(100.0, None)], [(6.0, 2)], own_wait_ms=150.0) == (3.0, 200.0)


@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
@pytest.mark.parametrize(
    ("alone", "own_wait", "wait"), [(200.0, 300.0, 500.0), (50.0, 10.0, 900.0), (800.0, 0.0, 40.0)]
)
def test_the_bound_covers_any_slowdown_the_extra_wait_causes(share, alone, own_wait, wait):
    """The derivation: the same ``share`` of each run's wait on the critical path, the code unchanged (``alone`` ms
    alone): baseline e2e ``alone + share * own_wait``, the run's ``alone + share * wait``. The bound (every
    millisecond of the extra wait on the critical path) is never below the ratio."""
    baseline, measured = alone + share * own_wait, alone + share * wait
    factor, delay = stretch_and_wait([(alone, wait)], [], own_wait_ms=own_wait)
    assert measured / baseline <= explained(measured, delay, factor) + 1e-12


def test_cpu_time_grown_beyond_the_baselines_is_allowed_up_to_the_cap():
    assert cpu_growth([200.0, 210.0, 230.0], own_cpu_ms=170.0) == pytest.approx(210 / 170)
    assert cpu_growth([160.0], own_cpu_ms=170.0) == 1.0  # less CPU time explains nothing
    assert cpu_growth([340.0, 400.0], own_cpu_ms=170.0) == CPU_GROWTH_CAP  # twice the work is the code's
    assert cpu_growth([None, None], own_cpu_ms=170.0) == cpu_growth([200.0], own_cpu_ms=None) == 1.0
