"""The malformed-input corpus of the newer commands (issue 40): ``accept``, ``lint --prune``, the results rows and
server records every results reader reads, FIFOs where a JSON file belongs, and ini values of the wrong type.

The same judgement as ``test_malformed_inputs`` (whose files, runner and check it uses): each case exits non-zero,
prints no traceback, names the file or option (or ini key) and the key, and leaves every file as it was. The
inputs add a real run's results file (version 3, with request rows) to that corpus's small valid files; a first
test shows each entry point accepts the unbroken inputs, so every case fails for its one broken thing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from tests.plugin.test_malformed_inputs import (
    PYTEST_ARGS,
    Bad,
    D,
    P,
    Ran,
    case_folder,
    check,
    materialize,
    run_in_process,
    snapshot,
)
from tests.support import resultfiles

RUN = "run.json"  # a real run's results file: rows, servers, the measurement accept builds an entry from
HISTORY = "history/run.json"
BAD_NUMBERS: dict[str, str] = {  # id -> the JSON text put where a figure belongs
    "nan": "NaN",
    "inf": "Infinity",
    "neg-inf": "-Infinity",
    "1e400": "1e400",
    "1e308": "1e308",
    "negative": "-1.5",
    "string": '"2532.2"',
    "true": "true",
    "object": "{}",
    "list": "[1.0]",
}
# A row's figures: (id, JSON path inside a row, the key the message names)
ROW_FIGURES = [
    ("e2e", ("e2e_ms",), "e2e_ms"),
    ("client", ("client_ms",), "client_ms"),
    ("load", ("load_ms",), "load_ms"),
    ("avg-step", ("avg_step_ms",), "avg_step_ms"),
    ("median-step", ("median_step_ms",), "median_step_ms"),
    ("stage", ("stages_ms", "DenoisingStage"), "stages_ms.DenoisingStage"),
    ("step", ("steps_ms", 0), "steps_ms.0"),
    ("sampled-step", ("sampled_steps_ms", "0"), "sampled_steps_ms.0"),
    ("memory", ("memory_mb", "runtime_peak", "peak_host_anon_mb"), "memory_mb.runtime_peak.peak_host_anon_mb"),
]
MARK = "__diffperf_corpus_value__"
LOOP = {"baselines.json": "loop.json", "loop.json": "baselines.json"}  # two links naming each other
OUTSIDE = "{parent}/outside/baselines.json"  # an absolute path out of the run's folder (materialize_all makes it)


def run_doc() -> dict[str, Any]:
    """The real run, its scenarios passed (a merge of it exits 0)."""
    doc = resultfiles.previous()
    for scenario in doc["scenarios"]:
        scenario |= {"verdict": "pass", "outcome": "pass"}
    return doc


def with_value(doc: dict[str, Any], where: tuple[str | int, ...], text: str) -> str:
    """``doc`` as JSON text with the raw JSON ``text`` at ``where`` (NaN, 1e400: what json.dumps cannot write)."""
    node: Any = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = MARK
    return json.dumps(doc).replace(json.dumps(MARK), text)


def row_text(where: tuple[str | int, ...], text: str) -> str:
    return with_value(run_doc(), ("rows", 0, *where), text)


def server_text(where: tuple[str | int, ...], text: str) -> str:
    return with_value(run_doc(), ("servers", 0, *where), text)


def run_with(change: Callable[[dict[str, Any]], None]) -> str:
    doc = run_doc()
    change(doc)
    return json.dumps(doc)


def renamed(name: str) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        old = doc["scenarios"][0]["scenario"]
        doc["scenarios"][0]["scenario"] = name
        for row in doc["rows"]:
            if row["scenario"] == old:
                row["scenario"] = name

    return change


ACCEPT = ("accept", RUN, "--baselines=baselines.json")
MERGE = ("merge", RUN, "-o", "merged.json")
TREND = ("trend", "history")
COMPARE_TO = (f"--diffperf-compare-to={RUN}",)


CASES: list[Bad] = []

# -- every figure of a request row, each bad number: accept, merge and trend (the history's reader) ----------------
for fid, where, key in ROW_FIGURES:
    for vid, text in BAD_NUMBERS.items():
        expected_key = f"rows.0.{key}"
        CASES.append(
            D(f"i40-accept-row-{fid}-{vid}", *ACCEPT, expect=(RUN, expected_key), raw={RUN: row_text(where, text)})
        )
        CASES.append(
            D(f"i40-merge-row-{fid}-{vid}", *MERGE, expect=(RUN, expected_key), raw={RUN: row_text(where, text)})
        )
        if vid in ("nan", "1e400", "negative", "string", "true"):
            CASES.append(
                D(
                    f"i40-trend-row-{fid}-{vid}",
                    *TREND,
                    expect=(HISTORY, expected_key),
                    raw={HISTORY: row_text(where, text)},
                )
            )

# -- a row's other keys ------------------------------------------------------------------------------------------------
ROW_OTHER = {
    "unknown-key": (("surprise",), "1", "rows.0.surprise"),
    "scenario-number": (("scenario",), "3", "rows.0.scenario"),
    "scenario-null": (("scenario",), "null", "rows.0.scenario"),
    "request-negative": (("request",), "-1", "rows.0.request"),
    "request-float": (("request",), "1.5", "rows.0.request"),
    "request-string": (("request",), '"0"', "rows.0.request"),
    "side-other": (("side",), '"both"', "rows.0.side"),
    "stages-list": (("stages_ms",), "[1.0]", "rows.0.stages_ms"),
    "steps-object": (("steps_ms",), '{"0": 1.0}', "rows.0.steps_ms"),
    "sampled-key-text": (("sampled_steps_ms",), '{"first": 1.0}', "rows.0.sampled_steps_ms"),
    "memory-unknown": (
        ("memory_mb", "runtime_peak", "surprise_mb"),
        "1.0",
        "rows.0.memory_mb.runtime_peak.surprise_mb",
    ),
    "memory-not-object": (("memory_mb",), "[]", "rows.0.memory_mb"),
}
for oid, (where, text, key) in ROW_OTHER.items():
    CASES.append(D(f"i40-accept-row-{oid}", *ACCEPT, expect=(RUN, key), raw={RUN: row_text(where, text)}))
    CASES.append(D(f"i40-merge-row-{oid}", *MERGE, expect=(RUN, key), raw={RUN: row_text(where, text)}))

# -- a server record ---------------------------------------------------------------------------------------------------
SERVER = {
    "port-zero": (("port",), "0"),
    "port-70000": (("port",), "70000"),
    "port-string": (("port",), '"51131"'),
    "pid-negative": (("pid",), "-3"),
    "pid-float": (("pid",), "2.5"),
    "load-nan": (("load_ms",), "NaN"),
    "load-negative": (("load_ms",), "-1"),
    "load-1e400": (("load_ms",), "1e400"),
    "log-number": (("log",), "3"),
    "devices-list": (("devices",), "[]"),
    "unknown-key": (("surprise",), "1"),
}
for sid, (where, text) in SERVER.items():
    key = f"servers.0.{where[0]}"
    CASES.append(D(f"i40-accept-server-{sid}", *ACCEPT, expect=(RUN, key), raw={RUN: server_text(where, text)}))
    CASES.append(D(f"i40-merge-server-{sid}", *MERGE, expect=(RUN, key), raw={RUN: server_text(where, text)}))
CASES += [
    D("i40-merge-scenario-server-port", *MERGE, expect=(RUN, "scenarios.0.server.port"),
      raw={RUN: with_value(run_doc(), ("scenarios", 0, "server", "port"), "-1")}),
    D("i40-accept-scenario-server-nan", *ACCEPT, expect=(RUN, "scenarios.0.server.load_ms"),
      raw={RUN: with_value(run_doc(), ("scenarios", 0, "server", "load_ms"), "NaN")}),
]  # fmt: skip

# -- accept: scenario names no baseline key may have, what it would write, its options ---------------------------------
for nid, name in {"dash-k": "-k", "empty": "", "space": "a b", "newline": "a\nb", "nbsp": "flux\u00a0tiny",
                  "dotdot": "../escape", "slash": "a/b", "tab": "a\tb", "long": "t" * 300,
                  "zero-width": "ti\u200bny"}.items():  # fmt: skip
    CASES.append(
        D(
            f"i40-accept-name-{nid}",
            *ACCEPT,
            expect=(RUN, "cannot be a baseline key"),
            raw={RUN: run_with(renamed(name))},
        )
    )
CASES += [
    D("i40-accept-wall-1e308", *ACCEPT, expect=("baselines.json", "estimated_full_test_time_s", "would not load"),
      raw={RUN: with_value(run_doc(), ("scenarios", 0, "measurement", "wall_s"), "1e308")}),
    D("i40-accept-wall-nan", *ACCEPT, expect=(RUN, "scenarios.0.measurement.wall_s", "finite"),
      raw={RUN: with_value(run_doc(), ("scenarios", 0, "measurement", "wall_s"), "NaN")}),
    D("i40-accept-from-without-ab", *ACCEPT, "--from=candidate", expect=("--from", "no A/B run")),
    D("i40-accept-rows-missing-stages", *ACCEPT, expect=(RUN, "rows.0.stages_ms", "required key"),
      raw={RUN: run_with(lambda d: d["rows"][0].pop("stages_ms"))}),
    D("i40-accept-recorded-absolute", "accept", RUN, expect=("--baselines", "outside this folder"),
      raw={RUN: run_with(lambda d: d.update(baselines=[OUTSIDE]))}),
    D("i40-accept-recorded-not-list", "accept", RUN, expect=("--baselines", "do not name one"),
      raw={RUN: run_with(lambda d: d.update(baselines="baselines.json"))}),
    D("i40-accept-baselines-folder-empty", "accept", RUN, "--baselines=empty", expect=("empty",)),
    D("i40-accept-version-2", "accept", "results.json", "--baselines=baselines.json", expect=("results.json", "version")),
]  # fmt: skip

# -- lint --prune: nothing deleted on a broken input -------------------------------------------------------------------
PRUNE = ("lint", "baselines.json", "cases.json", "--prune")
CASES += [
    D("i40-prune-broken-case-file", *PRUNE, "more_cases.json", expect=("--prune", "more_cases.json", "invalid JSON"),
      raw={"more_cases.json": '{"cases": ['}),
    D("i40-prune-no-cases", "lint", "baselines.json", "--cases=none.json", "--prune", expect=("none.json", "defines no case"),
      raw={"none.json": '{"cases": []}'}),
    D("i40-prune-gt-dir-missing", *PRUNE, "--gt-dir=nope", expect=("--gt-dir", "nope", "not found")),
    D("i40-prune-gt-dir-file", *PRUNE, "--gt-dir=cases.json", expect=("--gt-dir", "cases.json", "is not a folder")),
    D("i40-prune-gt-link-out", *PRUNE, "--gt-dir=gt", expect=("gt/gone_1gpu.png", "leads out of the ground-truth"),
      raw={"gt/gone_1gpu.png": b"x"}, links={"gt/gone_1gpu.png": "../empty/.keep"}),
    D("i40-prune-manifest-link-out", *PRUNE, "--gt-dir=gt", expect=("gt/manifest.json", "leads out of the ground-truth"),
      raw={"gt/gone_1gpu.png": b"x", "real_manifest.json": json.dumps({"format": 1, "files": {}})},
      links={"gt/manifest.json": "../real_manifest.json"}),
    D("i40-prune-override-names-pruned", *PRUNE, expect=("baselines.json", "runner_overrides.ci-.gone"),
      change=lambda f: f["baselines.json"].update(
          scenarios={**f["baselines.json"]["scenarios"], "gone": dict(f["baselines.json"]["scenarios"]["tiny"])},
          runner_overrides={"ci-": {"gone": {"expected_e2e_ms": 1.0}}})),
    D("i40-prune-dry-run-broken", *PRUNE, "--dry-run", "bad.json", expect=("--prune", "bad.json"), raw={"bad.json": "{"}),
]  # fmt: skip

# -- ini values of the wrong type (pyproject.toml's native TOML table, and [tool.pytest.ini_options] lists) -----------
TOML_KEYS = {  # keys the corpus's command line does not set (it would win)
    "json-int": ("diffperf_json = 5", "diffperf_json", "expected a string"),
    "log-dir-bool": ("diffperf_log_dir = true", "diffperf_log_dir", "expected a string"),
    "inconclusive-int": ("diffperf_inconclusive = 3", "diffperf_inconclusive", "expected a string"),
    "pairs-string": ('diffperf_ab_request_pairs = "four"', "diffperf_ab_request_pairs", "expected an integer"),
    "pairs-float": ("diffperf_ab_request_pairs = 2.5", "diffperf_ab_request_pairs", "expected an integer"),
    "pairs-bool": ("diffperf_ab_request_pairs = true", "diffperf_ab_request_pairs", "expected an integer"),
    "timeout-text": ('diffperf_startup_timeout = "soon"', "diffperf_startup_timeout", "expected a number"),
    "timeout-bool": ("diffperf_startup_timeout = false", "diffperf_startup_timeout", "expected a number"),
    "flag-string": ('diffperf_dry_run = "ture"', "diffperf_dry_run", "expected true or false"),
    "flag-int": ("diffperf_dry_run = 2", "diffperf_dry_run", "expected true or false"),
    "fraction-list": ("diffperf_busy_share = [0.5]", "diffperf_busy_share", "expected a string"),
}
for tid, (line, key, message) in TOML_KEYS.items():
    CASES.append(
        P(
            f"i40-toml-{tid}",
            expect=(key, "pyproject.toml", message),
            raw={"pyproject.toml": f"[tool.pytest]\n{line}\n"},
        )
    )
INI_KEYS = {
    "pairs-word": ("diffperf_ab_request_pairs = four", "diffperf_ab_request_pairs", "expected an integer"),
    "timeout-word": ("diffperf_startup_timeout = soon", "diffperf_startup_timeout", "expected a number"),
    "flag-word": ("diffperf_dry_run = ture", "diffperf_dry_run", "expected true or false"),
}
for iid, (line, key, message) in INI_KEYS.items():
    CASES.append(P(f"i40-ini-{iid}", expect=(key, "pytest.ini", message), raw={"pytest.ini": f"[pytest]\n{line}\n"}))
CASES += [
    P("i40-ini-options-list", expect=("diffperf_json", "pyproject.toml", "got a list (a.json, b.json)"),
      raw={"pyproject.toml": '[tool.pytest.ini_options]\ndiffperf_json = ["a.json", "b.json"]\n'}),
    P("i40-ini-side-names-ini-key", expect=("ini key diffperf_base", "pytest.ini"),
      raw={"pytest.ini": "[pytest]\ndiffperf_base = nosuchkey=1\n"}),
]  # fmt: skip


# -- values accepted silently before: noise priors, busy share, versions, frames, a stage no run has ---------------------
NOISE = {
    "ab": {"e2e": {"between": 0.01, "within": 0.03}},
    "static": {"e2e": {"baseline": 0.03, "process": 0.02, "within": 0.03}},
}
for pid, (path, value, key) in {
    "ab-all-zero": (("ab", "e2e"), {"between": 0.0, "within": 0.0}, "ab.e2e"),
    "static-all-zero": (("static", "e2e"), {"baseline": 0, "process": 0, "within": 0.0}, "static.e2e"),
    "weight-zero": (("ab", "e2e", "between_weight"), 0.0, "ab.e2e.between_weight"),
    "weight-1e300": (("ab", "e2e", "within_weight"), 1e300, "ab.e2e.within_weight"),
    "static-weight-zero": (("static", "e2e", "process_weight"), 0, "static.e2e.process_weight"),
    "sd-1e300": (("ab", "e2e", "between"), 1e300, "ab.e2e.between"),
    "sd-5": (("static", "e2e", "within"), 5.0, "static.e2e.within"),
}.items():  # fmt: skip
    doc = json.loads(json.dumps(NOISE))
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    CASES.append(
        P(
            f"i40-noise-{pid}",
            "--diffperf-noise=noise.json",
            expect=("noise.json", key),
            raw={"noise.json": json.dumps(doc)},
        )
    )
CASES += [
    P("i40-busy-share-subnormal", "--diffperf-busy-share=1e-320", expect=("--diffperf-busy-share", "1e-320")),
    P("i40-busy-share-tiny-percent", "--diffperf-busy-share=0.00001%", expect=("--diffperf-busy-share", "0.00001%")),
    D("i40-merge-version-float", *MERGE, expect=(RUN, "version", "3.0"), raw={RUN: with_value(run_doc(), ("version",), "3.0")}),
    D("i40-accept-version-true", *ACCEPT, expect=(RUN, "version"), raw={RUN: with_value(run_doc(), ("version",), "true")}),
    D("i40-trend-version-float", *TREND, expect=(HISTORY, "version"), raw={HISTORY: with_value(run_doc(), ("version",), "4.0")}),
    D("i38-accept-hardware-unknown", *ACCEPT, expect=(RUN, "hardware", "unknown platform 'tpu'"),
      raw={RUN: with_value(run_doc(), ("hardware",), '"tpu"')}),
    D("i38-accept-hardware-number", *ACCEPT, expect=(RUN, "hardware", "expected a platform name"),
      raw={RUN: with_value(run_doc(), ("hardware",), "100")}),
    D("i40-accept-num-frames-negative", *ACCEPT, expect=(RUN, "scenarios.0.measurement.num_frames"),
      raw={RUN: with_value(run_doc(), ("scenarios", 0, "measurement", "num_frames"), "-3")}),
    D("i40-merge-num-frames-zero", *MERGE, expect=(RUN, "scenarios.0.measurement.num_frames"),
      raw={RUN: with_value(run_doc(), ("scenarios", 0, "measurement", "num_frames"), "0")}),
    D("i40-accept-start-share-negative", *ACCEPT, expect=(RUN, "scenarios.0.measurement.start_share_s"),
      raw={RUN: with_value(run_doc(), ("scenarios", 0, "measurement", "start_share_s"), "-1")}),
    D("i40-trend-no-such-stage", *TREND, "--metric=stage:NoSuchStage", expect=("--metric", "stage:NoSuchStage", "DenoisingStage")),
    P("i40-json-dev-full", "--diffperf-json=/dev/full", expect=("--diffperf-json", "/dev/full", "device")),
    P("i40-html-dev-null", "--diffperf-html=/dev/null", expect=("--diffperf-html", "/dev/null", "device")),
    D("i40-merge-output-dev-full", *MERGE[:2], "-o", "/dev/full", expect=("/dev/full", "device")),
    D("i40-accept-lock-is-folder", *ACCEPT, expect=(".baselines.json.lock", "Is a directory"),
      raw={".baselines.json.lock": ""}, dirs=(".baselines.json.lock",)),
    P("i40-shard-out-of-range", "--diffperf-shard=3/2", expect=("--diffperf-shard", "3/2")),
    P("i40-shard-zero", "--diffperf-shard=0/2", expect=("--diffperf-shard", "0/2")),
    P("i40-ab-max-requests-1", "--diffperf-base=current", "--diffperf-ab-max-requests=1",
      expect=("--diffperf-ab-max-requests", "expected at least 16 requests", "got 1")),
    P("i40-baseline-symlink-loop", expect=("baselines.json", "loop of them"), raw={"loop.json": ""}, links=LOOP),
    D("i40-show-symlink-loop", "show", "baselines.json", expect=("baselines.json", "loop of them"), raw={"loop.json": ""}, links=LOOP),
    D("i40-merge-symlink-loop", "merge", "loop.json", "-o", "out.json", expect=("loop.json", "symbolic links"), raw={"loop.json": ""}, links=LOOP),
    D("i40-accept-baselines-symlink-loop", "accept", RUN, "--baselines=loop.json", expect=("loop.json",), raw={"loop.json": ""}, links=LOOP),
    D("i40-trend-alpha-nan", *TREND, "--alpha=nan", expect=("--alpha", "'nan'")),
    D("i40-trend-alpha-zero", *TREND, "--alpha=0", expect=("--alpha", "'0'")),
    D("i40-trend-alpha-one", *TREND, "--alpha=1", expect=("--alpha", "'1'")),
    D("i40-trend-min-size-zero", *TREND, "--min-size=0", expect=("--min-size", "'0'")),
    D("i40-trend-min-size-text", *TREND, "--min-size=two", expect=("--min-size", "'two'")),
    D("i40-trend-min-change-negative", *TREND, "--min-change=-0.1", expect=("--min-change", "'-0.1'")),
    D("i40-trend-min-change-inf", *TREND, "--min-change=inf", expect=("--min-change", "'inf'")),
]  # fmt: skip


def materialize_all(root: Path, bad: Bad) -> None:
    """The corpus's files, this corpus's run file (unless the case replaces it) and its history copy."""
    materialize(root, bad)
    for name in (RUN, HISTORY):
        path = root / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(run_doc()))
    if (root / "pytest.ini").exists() and (root / "pyproject.toml").exists():
        (root / "pyproject.toml").unlink()
    for name, content in bad.raw.items():  # "{parent}": the folder above the run's, for paths out of it
        if isinstance(content, str) and "{parent}" in content:
            (root / name).write_text(content.replace("{parent}", str(root.parent)))
            outside = Path(OUTSIDE.replace("{parent}", str(root.parent)))
            outside.parent.mkdir(exist_ok=True)
            outside.write_text((root / "baselines.json").read_text())


def test_the_table_adds_200_inputs_through_every_newer_entry_point():
    assert len(CASES) >= 200
    assert len({bad.id for bad in CASES}) == len(CASES)
    commands = {bad.args[0] for bad in CASES if bad.entry == "diffperf"}
    assert commands == {"accept", "merge", "trend", "lint", "show"}
    assert {bad.entry for bad in CASES} == {"pytest", "diffperf"}


@pytest.mark.parametrize(
    "args",
    [("accept", RUN, "--baselines=baselines.json", "--dry-run"), ("merge", RUN, "-o", "merged.json"), ("trend", "history"),
     ("lint", "baselines.json", "cases.json", "--prune", "--dry-run")],
    ids=lambda args: args[0],
)  # fmt: skip
def test_the_unbroken_inputs_pass(pytester: pytest.Pytester, args: tuple[str, ...]):
    """Each case breaks one thing of inputs each entry point takes as they are."""
    bad = D("control", *args, expect=())
    materialize_all(pytester.path, bad)
    code, out = run_in_process(bad, pytester.path, None)
    assert code == 0, out
    assert "Traceback" not in out


@pytest.mark.parametrize("bad", CASES, ids=lambda bad: bad.id)
def test_malformed_input_is_one_clear_error(
    bad: Bad, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, recwarn: pytest.WarningsRecorder
):
    if bad.id.startswith("i40-toml-") and Version(pytest.__version__).release < (9,):
        pytest.skip("pytest reads a native [tool.pytest] table from 9.0 on")
    root, pytester = case_folder(bad, request, monkeypatch)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    materialize_all(root, bad)
    before = snapshot(root)
    code, out = run_in_process(bad, root, pytester)
    check(bad, Ran(code, out, before, snapshot(root)))
    assert [str(w.message) for w in recwarn] == []  # the error alone (pytest 9.2 warns of a list for a string key)


FIFO_CASES = [
    P("fifo-noise", "--diffperf-noise=pipe.json", expect=("pipe.json", "FIFO")),
    P("fifo-compare-to", "--diffperf-compare-to=pipe.json", expect=("pipe.json", "FIFO")),
    P("fifo-compare-to-last", "--diffperf-history=history", "--diffperf-compare-to=last", expect=("pipe.json", "FIFO")),
    D("fifo-trend", "trend", "history", expect=("pipe.json", "FIFO")),
    D("fifo-accept-folder", "accept", "history", "--baselines=baselines.json", expect=("pipe.json", "FIFO")),
    D("fifo-merge", "merge", "pipe.json", "-o", "out.json", expect=("pipe.json", "FIFO")),
    D("fifo-show", "show", "pipe.json", expect=("pipe.json", "FIFO")),
    D("fifo-lint-cases", "lint", "baselines.json", "--cases=pipe.json", expect=("pipe.json", "FIFO")),
]


@pytest.mark.parametrize("bad", FIFO_CASES, ids=lambda bad: bad.id)
def test_a_fifo_where_a_json_file_belongs_is_refused_at_once(bad: Bad, pytester: pytest.Pytester):
    """Reading a FIFO waits for a writer that never comes: each reader refuses it unread."""
    materialize_all(pytester.path, bad)
    where = pytester.path / ("history" if any("history" in arg for arg in bad.args) else ".")
    os.mkfifo(where / "pipe.json")
    before = snapshot(pytester.path)
    code, out = run_in_process(bad, pytester.path, pytester)
    check(bad, Ran(code, out, before, snapshot(pytester.path)))


def test_typed_values_of_a_native_toml_table_are_read_as_their_type(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """pytest reads a ``[tool.pytest]`` table's values as typed (pytest 10 requires it): each key declares its
    type, so numbers and booleans there are taken, with pytest's warnings as errors."""
    bad = D("control", "unused", expect=())
    materialize_all(pytester.path, bad)
    (pytester.path / "pyproject.toml").write_text(
        "[tool.pytest]\ndiffperf_progress_every = 30\ndiffperf_ab_request_pairs = 5\ndiffperf_log_tail = 0\n"
        "diffperf_startup_timeout = 600.5\nregen_force = false\ndiffperf_json = 'out.json'\n"
    )
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the plugin by its module, as the corpus loads it
    result = pytester.runpytest("-p", "pytest_diffperf.plugin", "-W", "error::DeprecationWarning", *PYTEST_ARGS)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert "baselines.json::tiny" in result.stdout.str()
