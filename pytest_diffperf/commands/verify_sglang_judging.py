"""`diffperf verify-sglang`'s judging column: a release's own validator against the plugin's verdict, per check.

For every case, one synthetic baseline scenario (the fields the release's ``ScenarioConfig`` has, written to
a file that the release's ``BaselineConfig.load`` and the plugin's ``load_baselines`` both read) and synthetic
perf records (``Variant``): all within limits; e2e, load, the first and a middle sampled denoise step, each
stage and each memory figure just over and just under the plugin's limit; two requests with only the first over (where the case repeats requests);
the scenario without a load baseline, without a VRAM baseline, missing. SGLang's side runs the release's own
``test_diffusion_generation`` on its test class, offline: ``run_and_collect`` answers the records, the other
request-level checks (consistency, LoRA, output references) do nothing, and each ``_validate_and_record``
call's outcome is kept (its first failing check, named from its message). The plugin's side is the verdict
static mode reaches for the converted case by SGLang's rule (``judging.verdict.judge_requests`` under
``case_rules``: the case's judged requests, required baselines, perf-check scope and limit allowances; the run's noise mode, on
where noise priors were measured, is not SGLang's and not compared). A variant is equal when both pass, or
when the checks SGLang failed are among the plugin's (SGLang stops at a request's first failing check); on
ROCm, where SGLang only warns, a plugin failure of a limit SGLang passes is counted as explained.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import io
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from ..cases import Case
from ..errors import DiffperfError
from ..judging.verdict import case_rules, judge_requests
from ..perf import limits
from ..perf.baselines import load_baselines
from ..perf.measurement import Measurement
from ..perf.schema import ScenarioBaseline
from ..platforms import Platform, checks_host_anon, checks_vram, device_kind
from ..protocol import DECODING_STAGE_SUFFIX, DENOISING_STAGE, PER_FRAME_STAGE, PerfRecord
from ..sglang import guard, harness
from ..sglang.standins import MG

PERF_LOGGER = f"{MG}.runtime.utils.perf_logger"
PROFILE = "pr_test"  # the profile every release's BaselineConfig.load picks
STEPS = 13  # measured steps: step_fractions 0.2, 0.4, ... round to 2, 5, 7, 10 (where rounding shows)
TOLERANCES = {
    "e2e": 0.25, "denoise_stage": 0.25, "non_denoise_stage": 0.8, "denoise_step": 0.3, "denoise_agg": 0.2,
    "load_peak_vram": 0.01, "runtime_peak_vram": 0.02, "load": 0.4,
}  # fmt: skip  # SGLang 0.5.23's pr_test profile
STEP_FRACTIONS = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
STAGES = {"TextEncodingStage": 200.0, DENOISING_STAGE: 1300.0, f"Vae{DECODING_STAGE_SUFFIX}": 500.0}
E2E_MS, LOAD_MS = 10000.0, 20000.0
MEMORY = {
    "load_peak_vram_mb": 20000.0, "runtime_peak_vram_mb": 30000.0, "warmup_peak_vram_mb": 30000.0,
    "load_peak_allocated_mb": 18000.0, "runtime_peak_allocated_mb": 28000.0,
    "load_peak_host_anon_mb": 8000.0, "runtime_peak_host_anon_mb": 9000.0,
}  # fmt: skip
# A baseline memory key -> the perf record's snapshot and field that SGLang and the plugin read it from.
MEMORY_FIELDS = {
    f"{snap}_{kind}_mb": (snap, field)
    for snap in ("load_peak", "runtime_peak", "warmup_peak")
    for kind, field in (
        ("vram", "peak_reserved_mb"),
        ("allocated", "peak_allocated_mb"),
        ("host_anon", "peak_host_anon_mb"),
    )
}
WITHIN = 0.5  # a measured figure at this fraction of its baseline passes every rule
# SGLang's assertion messages -> the plugin's check names (first match wins)
MESSAGES: tuple[tuple[str, str], ...] = (
    (r"not found in", "scenario missing"),
    (r"missing a load/runtime peak VRAM baseline", "VRAM baseline missing"),
    (r"E2E baseline missing", "expected_e2e_ms missing"),
    (r"Load baseline missing", "expected_load_ms missing"),
    (r"'E2E Latency'|E2E duration", "e2e"),
    (r"'Load Latency|Load duration", "load"),
    (r"'Average Denoise Step'|Denoising step timings", "avg_denoise"),
    (r"'Median Denoise Step'", "median_denoise"),
    (r"'Denoise Step (\d+)'", "step[{0}]"),
    (r"Stage '([^']+)'|Stage (\S+) timing missing", "stage[{0}]"),
    (r"'Average Frame Time'", "per_frame"),
    (r"'Load Peak VRAM \(allocated\)'", "load_peak_allocated_mb"),
    (r"'Runtime Peak VRAM \(allocated\)'", "runtime_peak_allocated_mb"),
    (r"'Load Peak VRAM'|Load peak VRAM metric", "load_peak_vram_mb"),
    (r"'Runtime Peak VRAM'|Runtime peak VRAM metric", "runtime_peak_vram_mb"),
    (r"'Warmup Peak VRAM'", "warmup_peak_vram_mb"),
    (r"'Load Peak Host Anon'", "load_peak_host_anon_mb"),
    (r"'Runtime Peak Host Anon'", "runtime_peak_host_anon_mb"),
)
AMD_NOTE = (
    "over a limit that SGLang on ROCm only warns about (rel 1.0, a warning, never a failure): the plugin fails them "
    "(docs/baselines.md, 'Where we differ from SGLang')"
)
# Request-level checks besides performance that the release's test runs; nothing here (no output to check).
TESTS = ("test_diffusion_generation", "test_diffusion_perf")
KEPT = ("_validate_and_record", "_test_diffusion_generation_impl", "_test_diffusion_request")
SILENCED = ("_validate_", "_test_", "_save_", "_record_", "_print_", "_dump_")


@dataclass(frozen=True)
class Variant:
    """One synthetic run: the baseline file it is judged against, and each measured request's figures."""

    name: str
    doc: str  # full | no_load | no_vram | missing
    requests: tuple[dict[str, Any], ...]  # per request: {"e2e": ms, "load": ms, "step[3]": ms, "stage[X]": ms}


@dataclass(frozen=True)
class Baselines:
    """The synthetic baseline files of every case, as the release and the plugin read them."""

    release: dict[str, Any]  # doc kind -> the release's BaselineConfig
    plugin: dict[str, dict[str, ScenarioBaseline]]  # doc kind -> scenario id -> the plugin's
    rules: limits.JudgeRules
    amd: bool  # SGLang on ROCm warns instead of failing a check over its limit


def compare_all(
    loaded: harness.Harness, sglang_cases: Sequence[Any], ours: dict[str, Case], hardware: Platform
) -> dict[str, str]:
    """Case id -> ``equal (N variants)``, ``different: <variant>: <first difference>``, ``not expressible: <why>``
    or ``SGLang error: <what>``."""
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="diffperf-verify-judging-") as tmp:
        cases = [(tc, ours[tc.id]) for tc in sglang_cases if tc.id in ours]
        baselines = _baselines(loaded, [case for _tc, case in cases], hardware, Path(tmp))
        for tc in sglang_cases:
            case = ours.get(tc.id)
            if case is None:
                out[tc.id] = "not expressible: the case is not expressible"
            elif getattr(tc.sampling_params, "realtime_num_chunks", None) is not None:
                out[tc.id] = "not expressible: a realtime case (judged by chunk statistics, not perf records)"
            else:
                out[tc.id] = _compare(loaded, tc, case, baselines)
    return out


def _compare(loaded: harness.Harness, tc: Any, case: Case, baselines: Baselines) -> str:
    variants = variants_of(case, baselines.plugin["full"][case.id], baselines.rules)
    where = str(loaded.source.server_dir / harness.HARNESS_FILES[1])
    explained = 0
    with guard.foreign_code("test_diffusion_generation", where):
        for variant in variants:
            try:
                theirs = sglang_outcome(loaded, tc, variant, baselines)
            except _Unrun as exc:
                return f"SGLang error: {variant.name}: {exc}"
            mine = plugin_outcome(case, variant, baselines)
            if baselines.amd and not theirs and mine and not any(m.endswith("missing") for m in mine):
                explained += 1
            elif not _agrees(theirs, mine):
                return f"different: {variant.name}: SGLang {_say(theirs)}, plugin {_say(mine)}"
    note = f"; explained: {explained} run(s) {AMD_NOTE}" if explained else ""
    return f"equal ({len(variants)} variants){note}"


def _agrees(theirs: set[str], mine: set[str]) -> bool:
    return theirs <= mine if theirs else not mine


def _say(failed: set[str]) -> str:
    return f"fails {', '.join(sorted(failed))}" if failed else "passes"


def variants_of(case: Case, scenario: ScenarioBaseline, rules: limits.JudgeRules) -> list[Variant]:
    """The synthetic runs of ``case``: within limits, each targeted check just over and just under the plugin's
    limit, two requests with one over, a scenario without a load or a VRAM baseline, a missing scenario."""
    repeat = max(1, case.perf_repeat_requests)
    within: dict[str, Any] = {}
    checks = limits.plan_checks(
        scenario, rules, is_video=case.is_video, num_frames=case.num_frames, num_steps=STEPS, memory=None
    )
    sampled = [c.name for c in checks if c.kind == "step"]
    targets = ["e2e", "load", *sampled[:1], *sampled[len(sampled) // 2 : len(sampled) // 2 + 1]]
    targets += [c.name for c in checks if c.kind in ("stage", "vram", "host_anon")]
    by_name = {c.name: c for c in checks}
    out = [Variant("within limits", "full", (within,) * repeat)]
    for name in targets:
        if name not in by_name:
            continue
        top = by_name[name].limit
        over, under = {name: top * 1.0005 + 0.5}, {name: top * 0.9995 - 0.5}
        out += [Variant(f"{name} just over", "full", (over,) * repeat)]
        out += [Variant(f"{name} just under", "full", (under,) * repeat)]
    if repeat >= 2:
        over = {"e2e": by_name["e2e"].limit * 1.0005 + 0.5}
        out.append(
            Variant(f"{repeat} requests, the first alone over (e2e)", "full", (over,) + (within,) * (repeat - 1))
        )
    out += [
        Variant(f"scenario without a {what} baseline", f"no_{what.lower()}", (within,) * repeat)
        for what in ("load", "VRAM")
    ]
    out.append(Variant("baseline scenario missing", "missing", (within,) * repeat))
    return out


def _scenario(case: Case, fields: frozenset[str]) -> dict[str, Any]:
    """One synthetic baseline entry of ``case``: the fields the release's ``ScenarioConfig`` has."""
    steps = {str(i): 150.0 if i == 0 else 100.0 for i in limits.step_indices(STEPS, STEP_FRACTIONS)}
    stages = dict(STAGES)
    if case.is_video and case.num_frames:
        stages[PER_FRAME_STAGE] = E2E_MS / case.num_frames
    entry: dict[str, Any] = {
        "stages_ms": stages, "denoise_step_ms": steps, "expected_e2e_ms": E2E_MS,
        "expected_avg_denoise_ms": 100.0, "expected_median_denoise_ms": 100.0, "estimated_full_test_time_s": 60,
        "expected_load_ms": LOAD_MS, **MEMORY,
    }  # fmt: skip
    return {k: v for k, v in entry.items() if k in fields or k in ("stages_ms", "denoise_step_ms")}


def _docs(cases: Sequence[Case], fields: frozenset[str], tolerance: type) -> dict[str, dict[str, Any]]:
    """The synthetic baseline files, in the release's format: its ``ToleranceConfig``'s fields, by profile where it
    reads profiles (``load_profile``), flat before."""
    scenarios = {case.id: _scenario(case, fields) for case in cases}
    own = {k: v for k, v in TOLERANCES.items() if k in {f.name for f in dataclasses.fields(tolerance)}}
    tolerances = {PROFILE: own} if hasattr(tolerance, "load_profile") else own
    head = {"tolerances": tolerances, "sampling": {"step_fractions": STEP_FRACTIONS}}
    vram = ("load_peak_vram_mb", "runtime_peak_vram_mb")
    return {
        "full": {**head, "scenarios": scenarios},
        "no_load": {**head, "scenarios": {k: _without(v, ("expected_load_ms",)) for k, v in scenarios.items()}},
        "no_vram": {**head, "scenarios": {k: _without(v, vram) for k, v in scenarios.items()}},
        "missing": {**head, "scenarios": {}},
    }


def _without(entry: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in keys}


def _baselines(loaded: harness.Harness, cases: Sequence[Case], hardware: Platform, tmp: Path) -> Baselines:
    configs = loaded.configs
    fields = frozenset(f.name for f in dataclasses.fields(configs.ScenarioConfig))
    release: dict[str, Any] = {}
    plugin: dict[str, dict[str, ScenarioBaseline]] = {}
    rules: limits.JudgeRules | None = None
    for kind, doc in _docs(cases, fields, configs.ToleranceConfig).items():
        path = tmp / f"{kind}.json"
        path.write_text(json.dumps(doc))
        where = str(loaded.source.server_dir / "testcase_configs.py")
        with guard.foreign_code("BaselineConfig.load", where), contextlib.redirect_stdout(io.StringIO()):
            release[kind] = configs.BaselineConfig.load(path)
        ours = load_baselines(path)
        plugin[kind] = ours.scenarios
        rules = rules or limits.JudgeRules(
            ours.profile(PROFILE),  # the flat form serves every profile name
            limits.get_preset("sglang"),
            tuple(ours.step_fractions),
            vram=checks_vram(hardware),
            host_anon=checks_host_anon(hardware),
        )
    assert rules is not None
    return Baselines(release, plugin, rules, device_kind(hardware) == "hip")


def _figures(request: dict[str, Any]) -> dict[str, Any]:
    """One request's perf record (as ``performance.log`` holds it) and load time: ``WITHIN`` of the synthetic
    baseline, with the request's own figures."""
    stages = {name: ms * WITHIN for name, ms in STAGES.items()}
    steps = [WITHIN * 100.0] * STEPS
    memory = {
        snap: {
            "peak_reserved_mb": MEMORY[f"{snap}_vram_mb"] * WITHIN,
            "peak_allocated_mb": MEMORY.get(f"{snap}_allocated_mb", 0.0) * WITHIN,
            "peak_host_anon_mb": MEMORY.get(f"{snap}_host_anon_mb", 0.0) * WITHIN,
        }
        for snap in ("load_peak", "runtime_peak", "warmup_peak")
    }
    for key, value in request.items():
        if key.startswith("step["):
            steps[int(key[5:-1])] = value
        elif key.startswith("stage["):
            stages[key[6:-1]] = value
        elif key in MEMORY:
            snap, field = MEMORY_FIELDS[key]
            memory[snap][field] = value
    record = {
        "request_id": "synthetic", "commit_hash": "synthetic", "tag": "synthetic",
        "stages": [{"name": n, "execution_time_ms": ms} for n, ms in stages.items()], "steps": steps,
        "total_duration_ms": request.get("e2e", E2E_MS * WITHIN), "memory_snapshots": memory,
    }  # fmt: skip
    return {"record": record, "load_ms": request.get("load", LOAD_MS * WITHIN)}


def plugin_outcome(case: Case, variant: Variant, baselines: Baselines) -> set[str]:
    """The checks the plugin fails for ``variant`` (as ``judging.staticscenario`` judges the case; empty: passes)."""
    baseline = baselines.plugin[variant.doc].get(case.id)
    figures = [_figures(r) for r in variant.requests]
    if not case.run_perf_check and case.judged_without_perf_check == "nothing":
        return set()
    if baseline is None:
        return {"scenario missing"}
    measurement = Measurement.from_records(
        [PerfRecord.model_validate(f["record"]) for f in figures],
        load_ms=figures[0]["load_ms"],
        num_frames=case.num_frames,
        is_video=case.is_video,
    )
    rules = case_rules(baselines.rules, case)
    how = case.judged_requests if case.perf_repeat_requests >= 2 else "all"
    result = judge_requests(case.id, baseline, measurement, rules, how)
    failed = set()
    for check in result.checks:
        if check.verdict not in ("fail", "missing"):
            continue
        if check.verdict == "missing" and check.expected <= 0 and check.kind == "vram":
            failed.add("VRAM baseline missing")
        elif check.verdict == "missing" and check.expected <= 0 and check.kind in ("e2e", "load"):
            failed.add(f"expected_{check.kind}_ms missing")
        else:
            failed.add(check.name)
    return failed


class _Unrun(Exception):
    """SGLang's test failed before it judged a request (its own error, named)."""


def sglang_outcome(loaded: harness.Harness, tc: Any, variant: Variant, baselines: Baselines) -> set[str]:
    """The checks SGLang's own test fails for ``variant``: each judged request's first failing check."""
    common = loaded.common
    figures = [_figures(r) for r in variant.requests]
    queue = iter(figures * 2)  # a release that sends one more request than it judges gets the same figures
    outcomes: list[str] = []
    test = _test_instance(common)
    record_type = loaded.modules[PERF_LOGGER].RequestPerfRecord
    ctx = SimpleNamespace(load_time_ms=figures[0]["load_ms"], perf_log_path=None, process=None)

    pairs = "tuple" in str(inspect.signature(type(test).run_and_collect).return_annotation)  # 0.5.10 on: with content

    def run_and_collect(*_args: Any, collect_perf: bool = True, **_kwargs: Any) -> Any:
        figure = next(queue)
        ctx.load_time_ms = figure["load_ms"]
        record = _record(record_type, figure["record"]) if collect_perf else None
        return (record, b"") if pairs else record

    judge = test._validate_and_record

    def validate_and_record(*args: Any, **kwargs: Any) -> None:
        try:
            judge(*args, **kwargs)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit | DiffperfError) or type(exc).__name__ == "Skipped":
                raise
            outcomes.append(str(exc) or type(exc).__name__)
            raise
        outcomes.append("")

    test.run_and_collect = run_and_collect
    test._validate_and_record = validate_and_record
    case = _measured_only(tc)
    with _release_state(common, baselines.release[variant.doc]):
        try:
            getattr(test, _test_name(test))(case, ctx)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit | DiffperfError):
                raise
            if not outcomes:
                raise _Unrun(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    if not outcomes:
        raise _Unrun("no request was judged")
    return {_check_of(o) for o in outcomes if o}


def _record(record_type: type, fields: dict[str, Any]) -> Any:
    """The release's ``RequestPerfRecord`` of ``fields`` (the keywords its constructor takes)."""
    accepted = inspect.signature(record_type).parameters
    return record_type(**{k: v for k, v in fields.items() if k in accepted})


def _test_instance(common: ModuleType) -> Any:
    """The release's test class (the one with ``_validate_and_record``), its other request checks silenced."""
    cls = next(
        c
        for c in vars(common).values()
        if inspect.isclass(c) and c.__module__ == common.__name__ and hasattr(c, "_validate_and_record")
    )
    test = cls()
    for name in dir(cls):
        if name.startswith(SILENCED) and name not in KEPT and callable(getattr(cls, name)):
            setattr(test, name, _nothing)
    return test


def _test_name(test: Any) -> str:
    """The release's per-case test: ``test_diffusion_generation``, ``test_diffusion_perf`` in 0.5.7-0.5.9."""
    return next(n for n in TESTS if hasattr(test, n))


def _nothing(*_args: Any, **_kwargs: Any) -> None:
    return None


def _measured_only(tc: Any) -> Any:
    """``tc`` without what the release sends besides the measured requests (lead request, warmups, LoRA steps)."""
    case = copy.copy(tc)
    for name, value in (("lead_sampling_params", None), ("perf_warmup_requests", 0)):
        if hasattr(case, name):
            object.__setattr__(case, name, value)
    for name in ("run_lora_dynamic_load_check", "run_consistency_check"):
        if hasattr(case, name):
            object.__setattr__(case, name, False)
    return case


@contextlib.contextmanager
def _release_state(common: ModuleType, config: Any) -> Iterator[None]:
    """The release's module judging against ``config``, its request builder inert, its logs and prints silenced,
    outside baseline and ground-truth generation."""
    saved: dict[str, Any] = {
        n: getattr(common, n) for n in ("BASELINE_CONFIG", "get_generate_fn") if hasattr(common, n)
    }
    env = {k: os.environ.pop(k) for k in ("SGLANG_GEN_BASELINE", "SGLANG_GEN_GT") if k in os.environ}
    common.BASELINE_CONFIG = config  # type: ignore[attr-defined]
    common.get_generate_fn = _nothing  # type: ignore[attr-defined]
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logging.disable(previous)
        for name, value in saved.items():
            setattr(common, name, value)
        os.environ.update(env)


def _check_of(message: str) -> str:
    """The plugin's name of the check an SGLang assertion message names."""
    for pattern, name in MESSAGES:
        found = re.search(pattern, message)
        if found:
            return name.format(*(g for g in found.groups() if g is not None))
    return f"(unnamed: {message.splitlines()[0][:80]})"


def summary(results: dict[str, str]) -> str:
    """``N equal, M not expressible, ...`` by the first word(s) of each result."""
    heads = [r.split(":")[0].split(" (")[0] for r in results.values()]
    return ", ".join(f"{heads.count(h)} {h}" for h in dict.fromkeys(heads)) or "no case"


def differs(results: dict[str, str]) -> bool:
    return any(r.startswith(("different", "SGLang error")) for r in results.values())
