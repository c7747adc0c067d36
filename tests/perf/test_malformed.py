"""Every malformed file or argument gives one clear error naming the file and the key."""

from __future__ import annotations

import json

import pytest

from pytest_diffperf._util.findings import bare
from pytest_diffperf.consistency.thresholds import load_thresholds
from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.perf.baselines import load_baselines
from pytest_diffperf.perf.limits import get_preset
from pytest_diffperf.perf.lint import lint_baselines
from pytest_diffperf.platforms import canonical_platform
from tests.support.cli import diffperf

S = "scenarios.img_t2i"


def setter(path: str, value):
    """A doc mutation setting (or, for value ``...``, deleting) a dotted path (keys without dots)."""

    def mutate(doc: dict) -> None:
        *parents, last = path.split(".")
        node = doc
        for key in parents:
            node = node[key]
        if value is ...:
            del node[last]
        else:
            node[last] = value

    return mutate


def text(content: str):
    return lambda doc: content


def dump_then(old: str, new: str):
    """Serialise the doc, then replace text in it (to write what json.dumps cannot: duplicate keys)."""
    return lambda doc: json.dumps(doc).replace(old, new, 1)


OVERRIDES = {"b200-": {"img_t2i": {"expected_e2e_ms": 1.0}}}

# (id, mutation of the fixture H100 file, JSON path the error must name, text the message must contain)
BASELINE_CASES = [
    ("truncated", text('{"scenarios": {"a": '), None, "invalid JSON: Expecting value at line 1, column 21"),
    ("empty-file", text(""), None, "invalid JSON: Expecting value at line 1, column 1"),
    ("trailing-comma", text('{"scenarios": {},}'), None, "line 1, column 18"),
    ("top-level-list", text("[]"), None, "expected a JSON object at the top level, got a list"),
    ("no-scenarios", setter("scenarios", ...), "scenarios", "required key is missing"),
    ("scenarios-list", setter("scenarios", []), "scenarios", "expected an object, got a list"),
    ("scenario-string", setter(S, "fast"), S, "expected an object, got 'fast'"),
    ("missing-stages", setter(f"{S}.stages_ms", ...), f"{S}.stages_ms", "required key is missing"),
    ("missing-e2e", setter(f"{S}.expected_e2e_ms", ...), f"{S}.expected_e2e_ms", "required key is missing"),
    (
        "missing-median",
        setter(f"{S}.expected_median_denoise_ms", ...),
        f"{S}.expected_median_denoise_ms",
        "missing",
    ),
    (
        "e2e-string",
        setter(f"{S}.expected_e2e_ms", "1100"),
        f"{S}.expected_e2e_ms",
        "expected a valid number, got '1100'",
    ),
    (
        "e2e-negative",
        setter(f"{S}.expected_e2e_ms", -5),
        f"{S}.expected_e2e_ms",
        "greater than or equal to 0, got -5",
    ),
    (
        "e2e-nan",
        setter(f"{S}.expected_e2e_ms", float("nan")),
        f"{S}.expected_e2e_ms",
        "expected a finite number",
    ),
    (
        "e2e-inf",
        setter(f"{S}.expected_e2e_ms", float("inf")),
        f"{S}.expected_e2e_ms",
        "expected a finite number",
    ),
    (
        "avg-bool",
        setter(f"{S}.expected_avg_denoise_ms", True),
        f"{S}.expected_avg_denoise_ms",
        "valid number, got True",
    ),
    (
        "stage-string",
        setter(f"{S}.stages_ms.DenoisingStage", "x"),
        f"{S}.stages_ms.DenoisingStage",
        "valid number",
    ),
    (
        "stage-negative",
        setter(f"{S}.stages_ms.DecodingStage", -1),
        f"{S}.stages_ms.DecodingStage",
        "greater than",
    ),
    ("stages-list", setter(f"{S}.stages_ms", [1, 2]), f"{S}.stages_ms", "expected an object, got a list"),
    (
        "step-key",
        setter(f"{S}.denoise_step_ms.first", 1.0),
        f"{S}.denoise_step_ms.first",
        "expected a step index",
    ),
    (
        "step-null",
        setter(f"{S}.denoise_step_ms.3", None),
        f"{S}.denoise_step_ms.3",
        "expected a valid number, got None",
    ),
    ("step-nan", setter(f"{S}.denoise_step_ms.3", float("nan")), f"{S}.denoise_step_ms.3", "finite number"),
    ("notes-number", setter(f"{S}.notes", 3), f"{S}.notes", "expected a valid string, got 3"),
    ("load-string", setter(f"{S}.expected_load_ms", "slow"), f"{S}.expected_load_ms", "valid number"),
    (
        "vram-negative",
        setter(f"{S}.load_peak_vram_mb", -1.0),
        f"{S}.load_peak_vram_mb",
        "greater than or equal to 0",
    ),
    ("timing-tol-negative", setter(f"{S}.timing_tolerance", -0.5), f"{S}.timing_tolerance", "greater than"),
    ("dup-scenario", dump_then('"vid_t2v":', '"img_t2i":'), "scenarios.img_t2i", "duplicate key"),
    (
        "dup-stage",
        dump_then('"TextEncodingStage":', '"DenoisingStage":'),
        f"{S}.stages_ms.DenoisingStage",
        "duplicate",
    ),
    (
        "tolerances-list",
        setter("tolerances", [0.1]),
        "tolerances",
        "expected an object of tolerance profiles",
    ),
    ("tolerances-empty", setter("tolerances", {}), "tolerances", "expected an object of tolerance profiles"),
    (
        "profile-number",
        setter("tolerances.pr_test", 0.25),
        "tolerances.pr_test",
        "expected an object, got 0.25",
    ),
    (
        "profile-no-e2e",
        setter("tolerances.pr_test.e2e", ...),
        "tolerances.pr_test.e2e",
        "required key is missing",
    ),
    (
        "profile-negative",
        setter("tolerances.long_term.denoise_step", -0.3),
        "tolerances.long_term.denoise_step",
        "greater than or",
    ),
    (
        "profile-string",
        setter("tolerances.pr_test.load", "0.4"),
        "tolerances.pr_test.load",
        "valid number, got '0.4'",
    ),
    ("no-sampling", setter("sampling", ...), "sampling", "required key is missing"),
    (
        "request-cpu-negative-wait",
        setter(f"{S}.request_cpu", {"cpu_ms": 180.0, "wait_ms": -1.0}),
        f"{S}.request_cpu.wait_ms",
        "greater than or",
    ),
    ("request-cpu-number", setter(f"{S}.request_cpu", 300.0), f"{S}.request_cpu", "expected an object, got 300.0"),
    (
        "fraction-above-1",
        setter("sampling.step_fractions", [0, 1.5]),
        "sampling.step_fractions.1",
        "less than or equal",
    ),
    ("fractions-not-list", setter("sampling.step_fractions", 0.5), "sampling.step_fractions", "valid list"),
    ("overrides-list", setter("runner_overrides", []), "runner_overrides", "expected an object, got a list"),
    (
        "override-prefix-list",
        setter("runner_overrides", {"b200-": []}),
        "runner_overrides.b200-",
        "expected an object",
    ),
    (
        "override-unknown-scenario",
        setter("runner_overrides", {"b200-": {"nope": {"expected_e2e_ms": 1.0}}}),
        "runner_overrides.b200-.nope",
        "override for a scenario that is not in the file",
    ),
    (
        "override-fields-number",
        setter("runner_overrides", {"b200-": {"img_t2i": 5}}),
        "runner_overrides.b200-.img_t2i",
        "expected an object of fields, got 5",
    ),
    (
        "override-bad-value",
        setter("runner_overrides", {"b200-x": {"img_t2i": {"expected_e2e_ms": "fast"}}}),
        "runner_overrides.b200-x.img_t2i.expected_e2e_ms",
        "valid number",
    ),
]
# Make the override cases with a matching runner; the "b200-" and "b200-x" prefixes match it.
RUNNER = "b200-x-1"


@pytest.mark.parametrize(
    ("mutate", "key", "fragment"), [c[1:] for c in BASELINE_CASES], ids=[c[0] for c in BASELINE_CASES]
)
def test_malformed_baseline(write, h100_doc, mutate, key, fragment):
    content = mutate(h100_doc)
    path = write("perf_baselines.json", h100_doc if content is None else content)
    with pytest.raises(DiffperfError) as exc:
        load_baselines(path, runner_name=RUNNER)
    message = str(exc.value)
    assert message.startswith(f"{path}: {key}: " if key else f"{path}: "), message
    assert fragment in message
    assert "\n" not in message
    assert exc.value.source == str(path) and exc.value.key == key


@pytest.mark.parametrize(
    ("mutate", "key", "fragment"), [c[1:] for c in BASELINE_CASES], ids=[c[0] for c in BASELINE_CASES]
)
def test_lint_reports_what_loading_refuses(write, h100_doc, mutate, key, fragment):
    """One validator: the loader's error is among lint's errors, same file, same key, same words."""
    content = mutate(h100_doc)
    path = write("perf_baselines.json", h100_doc if content is None else content)
    with pytest.raises(DiffperfError) as exc:
        load_baselines(path, runner_name=RUNNER)
    errors = [f for f in lint_baselines(path) if f.severity == "error"]
    message = bare(exc.value).split(" (and ")[0]
    assert any(str(exc.value.key or "").endswith(f.key) and f.message == message for f in errors), (message, errors)


def test_several_problems_make_one_message(write, h100_doc):
    scenario = h100_doc["scenarios"]["img_t2i"]
    scenario["expected_e2e_ms"] = "x"
    scenario["expected_load_ms"] = -1
    path = write("perf_baselines.json", h100_doc)
    with pytest.raises(DiffperfError, match=r"expected_e2e_ms: expected a valid number, got 'x' \(and 1 more problem"):
        load_baselines(path, runner_name="")


def test_malformed_fragment_names_the_fragment(write, h100_doc):
    write("perf_baselines/h100.json", h100_doc)
    fragment = write("ascend/perf_baselines_npu.json", '{"scenarios": {"x": {"stages_ms": {}}}}')
    with pytest.raises(DiffperfError) as exc:
        load_baselines(fragment.parent.parent / "perf_baselines", "npu")
    assert str(exc.value).startswith(f"{fragment}: scenarios.x.denoise_step_ms: required key is missing")


def test_unreadable_bytes(write, tmp_path):
    path = tmp_path / "perf_baselines.json"
    path.write_bytes(b'{"scenarios": "\xff\xfe"}')
    with pytest.raises(DiffperfError, match="cannot read"):
        load_baselines(path)


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (
            lambda d: load_baselines(d / "perf_baselines", canonical_platform("a100")),
            "unknown platform 'a100'; expected one of: h100",
        ),
        (lambda d: load_baselines(d / "perf_baselines"), "needs a hardware platform; files here: b200, h100"),
        (lambda d: load_baselines(d / "perf_baselines", "5090"), "no baseline file for platform '5090'"),
        (lambda d: load_baselines(d / "nowhere.json"), "nowhere.json: file not found"),
        (
            lambda d: load_baselines(d / "perf_baselines", "h100").profile("nightly"),
            "unknown tolerance profile",
        ),
        (lambda d: get_preset("fast"), "unknown preset 'fast'; expected one of: sglang"),
        (
            lambda d: load_thresholds(d / "consistency_thresholds"),
            "needs a hardware platform; files here: b200, h100",
        ),
        (lambda d: load_thresholds(d / "consistency_thresholds", canonical_platform("gfx")), "unknown platform 'gfx'"),
    ],
    ids=[
        "bad-alias",
        "dir-no-hardware",
        "no-platform-file",
        "no-file",
        "bad-profile",
        "bad-preset",
        "thr-dir",
        "thr-alias",
    ],
)
def test_bad_arguments(layout, call, fragment):
    with pytest.raises(DiffperfError) as exc:
        call(layout)
    assert fragment in str(exc.value)


THRESHOLD_CASES = [
    (
        "clip-above-1",
        setter("cases.a.clip_threshold", 1.2),
        "cases.a.clip_threshold",
        "less than or equal to 1",
    ),
    ("psnr-string", setter("cases.a.psnr_threshold", "28"), "cases.a.psnr_threshold", "valid number"),
    (
        "mad-negative",
        setter("default_mean_abs_diff_threshold_image", -1),
        "default_mean_abs_diff_threshold_image",
        "greater than",
    ),
    ("ssim-nan", setter("cases.a.ssim_threshold", float("nan")), "cases.a.ssim_threshold", "finite number"),
    ("cases-list", setter("cases", []), "cases", "expected an object, got a list"),
    ("case-number", setter("cases.a", 0.9), "cases.a", "expected an object, got 0.9"),
    ("dup-case", dump_then('"b":', '"a":'), "cases.a", "duplicate key"),
]


@pytest.mark.parametrize(
    ("mutate", "key", "fragment"), [c[1:] for c in THRESHOLD_CASES], ids=[c[0] for c in THRESHOLD_CASES]
)
def test_malformed_thresholds(write, mutate, key, fragment):
    doc = {"cases": {"a": {"clip_threshold": 0.9}, "b": {"ssim_threshold": 0.9}}}
    content = mutate(doc)
    path = write("consistency_threshold.json", doc if content is None else content)
    with pytest.raises(DiffperfError) as exc:
        load_thresholds(path)
    assert str(exc.value).startswith(f"{path}: {key}: ")
    assert fragment in str(exc.value)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["show", "{bad}"], "invalid JSON: Expecting value at line 1, column 21"),
        (
            ["show", "{neg}"],
            "scenarios.img_t2i.expected_e2e_ms: expected a number greater than or equal to 0",
        ),
        (["show", "{layout}/perf_baselines", "--hardware", "a100"], "unknown platform 'a100'"),
        (["show", "{layout}/perf_baselines/h100.json", "--profile", "nightly"], "unknown tolerance profile"),
        (["show", "{layout}/perf_baselines/h100.json", "--preset", "fast"], "unknown preset 'fast'"),
        (["show", "{layout}/perf_baselines/h100.json", "img"], "no scenario 'img'; did you mean: img_t2i"),
        (["lint", "{tmp}/missing.json"], "missing.json: file not found"),
        (["lint", "{layout}", "--hardware", "tpu"], "unknown platform 'tpu'"),
    ],
    ids=["truncated", "negative", "alias", "profile", "preset", "scenario", "lint-missing", "lint-alias"],
)
def test_cli_errors(write, h100_doc, layout, tmp_path, args, fragment):
    bad = write("bad/perf_baselines.json", '{"scenarios": {"a": ')
    h100_doc["scenarios"]["img_t2i"]["expected_e2e_ms"] = -1
    neg = write("neg/perf_baselines.json", h100_doc)
    paths = {"bad": bad, "neg": neg, "layout": layout, "tmp": tmp_path}
    result = diffperf(*(a.format(**paths) for a in args))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"diffperf {args[0]}: error: ")
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
