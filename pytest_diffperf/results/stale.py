"""A scenario far faster than its stored baseline: the baseline is likely stale (another machine's, a busy
day's, or the code got faster), and a baseline that slow lets a real regression pass."""

from __future__ import annotations

import shlex

from .model import ScenarioResult

FAR_FASTER = 0.5  # e2e at most half the stored figure: no noise explains it


def stale_note(result: ScenarioResult) -> str | None:
    """``stale baseline? e2e -58.7 % (1.2 s against 2.9 s stored); record this machine when it is quiet: ...``
    for a scenario whose judged e2e is at most :data:`FAR_FASTER` of its baseline's; else None."""
    check = result.check("e2e")
    if check is None or check.actual is None or check.expected <= 0 or check.actual > FAR_FASTER * check.expected:
        return None
    change = check.actual / check.expected - 1
    command = shlex.join(["pytest", "--regen-baselines", "-k", result.scenario])
    return (
        f"stale baseline? e2e {change:+.1%} ({check.actual:.0f} ms against {check.expected:.0f} ms stored); "
        f"record this machine when it is quiet: {command} (with this run's options)"
    )
