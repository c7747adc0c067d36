"""A failing scenario's report: the message, what to do next, and the server log's tail, by ``--tb``.

The report is pytest's own exception representation (``ReprExceptionInfo`` with one native entry
and a log section), so it reaches an xdist controller as it left the worker, and its crash line
(``reprcrash``) is the one-line summary pytest prints for ``--tb=line``, in the short test summary
(``-r``) and as the JUnit failure message:

- ``--tb=line``: that summary alone (``PERFORMANCE: 2 check(s) failed: e2e 642.37 ms +152.2% ...``);
- ``--tb=short``: the message, the next commands and the log's last 20 lines;
- ``--tb=long`` / ``auto`` / ``native``: the same with the log's last 200 lines;
- ``--tb=no``: nothing (pytest's own rule).

``--diffperf-log-tail N`` sets the number of log lines. Access-log lines (health and job polls)
never count: the tail is what the server said.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from _pytest._code.code import ReprEntryNative, ReprExceptionInfo, ReprFileLocation, ReprTraceback

from ..consistency.result import PREFIX as CONSISTENCY_PREFIX
from ..judging.verdict import PERF_PREFIX
from ..perf.limits import MEMORY_KINDS
from ..results.model import CheckRecord, ScenarioResult
from ..results.nextsteps import RunContext, ground_truth_next, inconclusive_next
from ..results.tables import change, failing_checks, output_reason, pct
from ..serving.process import TAIL_LINES, ServerFailure, ServerLog
from .items import ScenarioItem, plain_longrepr
from .report import RESULT_PROPERTY
from .stash import get_session

SHORT_TAIL = 20
HEADLINE_CHECKS = 3  # failing checks named in the one-line summary
# The run's options a regeneration command repeats (those that choose the files, the server and the devices).
REPEATED = (
    "--diffperf-baselines",
    "--diffperf-hardware",
    "--diffperf-cases",
    "--diffperf-suites",
    "--diffperf-server",
    "--diffperf-preset",
    "--diffperf-devices",
    "--diffperf-startup-timeout",
    "--diffperf-request-timeout",
)
GROUND_TRUTH = ("--diffperf-gt-dir", "--diffperf-clip-model", "--diffperf-clip-pretrained")  # and a GT command these


def scenario_longrepr(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> ReprExceptionInfo | None:
    """The report of a scenario's own kind of failure (None: pytest's traceback is kept)."""
    text = plain_longrepr(item, excinfo)
    if text is None or not isinstance(item, ScenarioItem):
        return None
    exc = excinfo.value
    log: ServerLog | None
    if isinstance(exc, ServerFailure) and exc.server is not None:
        log = exc.server
        body = f"server {log.url} {exc.problem}" + (f"\n{exc.note}" if exc.note else "") + f"\ncommand: {log.command}"
    else:
        log = item.server.snapshot() if item.server is not None else None
        body = strip_log(text, log)
    result = reported_result(item)
    style = str(item.config.option.tbstyle)
    lines = [] if style == "line" else [body.rstrip(), *next_steps(item, result, body)]  # line: the crash line alone
    crash = ReprFileLocation(item.nodeid, 0, headline(body, result))
    repr_ = ReprExceptionInfo(ReprTraceback([ReprEntryNative([line + "\n" for line in lines])], None, "native"), crash)
    session = get_session(item.config)
    wanted = session.settings.diffperf_log_tail if session is not None else None
    tail = wanted if wanted is not None else (SHORT_TAIL if style == "short" else TAIL_LINES)
    if log is not None and style != "line":
        kept = log.lines()[-tail:] if tail > 0 else []
        dropped = f", {log.left_out} access-log line(s) left out" if log.left_out else ""
        name = f"server log {log.path} (last {len(kept)} line(s){dropped})"
        repr_.addsection(name, "\n".join(kept) or "(no lines)")
    return repr_


def strip_log(text: str, log: ServerLog | None) -> str:
    """The message without the log section the item appended (the report adds its own, filtered and sized)."""
    if log is None:
        return text
    marker = f"\n\nlog: {log.path}"
    return text.split(marker, 1)[0] if marker in text else text


def reported_result(item: pytest.Item) -> ScenarioResult | None:
    """The result the item reported before it failed (None when it reported none)."""
    found = [value for name, value in item.user_properties if name == RESULT_PROPERTY]
    return ScenarioResult.model_validate_json(str(found[-1])) if found else None


def headline(body: str, result: ScenarioResult | None) -> str:
    """The failure on one line, each kind's verdict first (an 80-column short test summary keeps
    ``regressed: e2e +61 %``): an A/B run's headline, the failing checks with their changes (as many as it
    counts), the output's failed metrics and frames, else each kind's first line."""
    parts = []
    for line in (line.strip() for line in body.splitlines()):
        if line.startswith(PERF_PREFIX):
            parts.append(_performance(line, result))
        elif line.startswith(CONSISTENCY_PREFIX):
            consistency = result.consistency if result is not None else None
            parts.append(
                f"output differs from its ground truth: {output_reason(consistency)}"
                if consistency and consistency.get("frames")
                else line.removeprefix(CONSISTENCY_PREFIX).strip()
            )
    if not parts:
        parts = [next((line.strip() for line in body.splitlines() if line.strip()), "failed")]
    return "; ".join(parts)


def _performance(line: str, result: ScenarioResult | None) -> str:
    bad = failing_checks(result) if result is not None else []
    if result is not None and result.ab is not None and result.ab.verdict != "unchanged":
        ab = f"{result.ab.headline} (A/B against the base: {result.ab.base})"
        return ab if not bad else f"{ab}; {_checks(bad)}"
    if bad:
        return _checks(bad)
    return line.removeprefix(PERF_PREFIX).strip()


def _checks(bad: list[CheckRecord]) -> str:
    named = ", ".join(_check(c.name, c.actual, c.expected, c.limit, c.kind) for c in bad[:HEADLINE_CHECKS])
    more = f", and {len(bad) - HEADLINE_CHECKS} more" if len(bad) > HEADLINE_CHECKS else ""
    return f"{len(bad)} check(s) failed: {named}{more}"


def _check(name: str, actual: float | None, expected: float, limit: float, kind: str) -> str:
    unit = "MiB" if kind in MEMORY_KINDS else "ms"
    if actual is None:
        return f"{name} missing"
    return f"{name} {actual:.2f} {unit} {pct(change(actual, expected))} (limit {limit:.2f}, {pct(change(limit, expected))})"


def next_steps(item: ScenarioItem, result: ScenarioResult | None, body: str) -> list[str]:
    """The commands that help next, for the kind of failure."""
    session = get_session(item.config)
    if session is None:
        return []
    sid = item.name
    regen = shlex.join(["pytest", "--regen-baselines", *_repeated(item.config), *_select(item, sid)])
    steps: list[tuple[str, str]] = []
    settings = session.settings
    run = RunContext(
        str(settings.diffperf_json) if settings.diffperf_json else None,
        [_shown(p, item.config) for p in session.baselines.files],
        str(settings.diffperf_gt_dir) if settings.diffperf_gt_dir else None,
        session.ab is not None,
    )
    if result is not None and result.consistency_status == "fail":
        command = ground_truth_next(sid, run, _repeated(item.config, GROUND_TRUTH), _select(item, sid))
        steps.append(("if the output change is intended", command))
    if result is not None and result.verdict == "inconclusive":
        steps += inconclusive_next([sid], run)
    if result is not None and failing_checks(result):
        baseline = _shown(session.baselines.source.get(sid, session.baselines.primary), item.config)
        show = ["diffperf", "show", baseline, sid]
        if session.settings.profile:
            show += ["--profile", session.settings.profile]
        steps += [("if the change is intended", regen), ("every limit of the scenario", shlex.join(show))]
    elif item.baseline is None and result is not None and result.verdict == "fail":
        steps.append(("write this baseline for you", regen))
    elif item.case is None:
        steps.append(("SGLang's cases as a case file", "diffperf import-cases PATH-TO-SGLANG -o cases.json"))
    if not steps:
        return []
    width = max(len(label) for label, _ in steps)
    return ["", "next:", *(f"  {label + ':':<{width + 1}}  {command}" for label, command in steps)]


def _select(item: ScenarioItem, sid: str) -> list[str]:
    """``-k ID``, or the node id when ``-k ID`` would also select other scenarios (it matches substrings)."""
    session = get_session(item.config)
    others = [s for s in (session.scenario_ids() if session else []) if s != sid and sid.lower() in s.lower()]
    if others or not sid.isidentifier():
        return [item.nodeid]
    return ["-k", sid]


def _repeated(config: pytest.Config, more: tuple[str, ...] = ()) -> list[str]:
    """The options of this run's command line that choose its files, server and devices (and ``more``), as typed."""
    args = [str(a) for a in config.invocation_params.args]
    out: list[str] = []
    for i, arg in enumerate(args):
        name = arg.split("=", 1)[0]
        if name in REPEATED or name in more:
            out.append(arg)
            if "=" not in arg and i + 1 < len(args):
                out.append(args[i + 1])
    return out


def _shown(path: Path, config: pytest.Config) -> str:
    """A path as the user would type it: relative to the invocation folder when inside it."""
    try:
        return str(path.relative_to(config.invocation_params.dir))
    except ValueError:
        return str(path)
