"""Every malformed input is one clear error: through the real entry points (the plugin, in pytester, and every
``diffperf`` subcommand, in-process; a few of each as real subprocesses), each case of the table must exit
non-zero, print no traceback, name the file or option and the key, and leave every file on disk as it was.

The inputs are small valid files (a baseline, a case file, thresholds, a ground-truth folder with its manifest,
a results file) with one thing broken per case. The plugin runs with ``--co``: nothing may start a server.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from PIL import Image

from tests.support.cli import diffperf
from tests.support.paths import REPO, SGLANG_DATA
from tests.support.suite import GENEROUS, TOLERANCES, tiny_case

PYTEST_ARGS = (
    "--diffperf=pr_test",
    "--diffperf-baselines=baselines.json",
    "--diffperf-cases=cases.json",
    "--diffperf-server=reference",
    "--diffperf-hardware=cpu",
    "-p", "no:cacheprovider",
    "--co", "-q",
)  # fmt: skip
GPU_CASES = SGLANG_DATA / "v0.5.23/src/sglang/multimodal_gen/test/server/gpu_cases.py"
CONSISTENCY = ("--diffperf-gt-dir=gt", "--diffperf-clip-model=diffperf-tiny", "--diffperf-clip-pretrained=none")
THRESHOLDS = (*CONSISTENCY, "--diffperf-thresholds=thresholds.json")


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 64), (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


PNG = _png()
for _library in ("open_clip", "skimage.metrics"):  # torch with open_clip: loaded once, before any in-process run
    importlib.import_module(_library)


def base_files() -> dict[str, Any]:
    """The valid inputs: path -> JSON data (dict) or raw content (str, bytes)."""
    result = {
        "scenario": "tiny",
        "verdict": "pass",
        "checks": [],
        "message": "",
        "rows": [],
        "server": {"pid": 1, "port": 20001, "log": "server.log"},
    }
    return {
        "baselines.json": {
            "metadata": {"hardware": "cpu"},
            "tolerances": TOLERANCES,
            "sampling": {"step_fractions": [0.0, 0.5, 1.0]},
            "scenarios": {"tiny": dict(GENEROUS)},
        },
        "cases.json": {"cases": [tiny_case("tiny")]},
        "thresholds.json": {"default_ssim_threshold_image": 0.9, "cases": {"tiny": {"psnr_threshold": 20.0}}},
        "gt/tiny_1gpu.png": PNG,
        "gt/manifest.json": {
            "format": 1,
            "files": {"tiny_1gpu.png": {"sha256": hashlib.sha256(PNG).hexdigest(), "bytes": len(PNG)}},
        },
        "results.json": {
            "version": 2,
            "profile": "pr_test",
            "preset": "sglang",
            "hardware": "cpu",
            "launcher": "reference",
            "shard": "1/1",
            "baselines": ["baselines.json"],
            "rows": [],
            "scenarios": [result],
            "servers": [result["server"]],
        },
        "empty/.keep": "",
    }


Change = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Bad:
    """One malformed input: what to change in the base files, how to run, what the message must name."""

    id: str
    entry: Literal["pytest", "diffperf"]
    args: tuple[str, ...]
    expect: tuple[str, ...]  # substrings of the output: the file or option, the key, what was expected
    change: Change | None = None
    raw: Mapping[str, str | bytes] = field(default_factory=dict)  # files replaced by this content
    links: Mapping[str, str] = field(default_factory=dict)  # files replaced by a symlink to this target
    subprocess: bool = False  # run as a real process too (python -m pytest / python -m pytest_diffperf.cli)


def scenario(**fields: Any) -> Change:
    return lambda f: f["baselines.json"]["scenarios"]["tiny"].update(fields)


def case(**fields: Any) -> Change:
    return lambda f: f["cases.json"]["cases"][0].update(fields)


def drop_case_key(key: str) -> Change:
    return lambda f: f["cases.json"]["cases"][0].pop(key)


def rename_scenario(name: str) -> Change:
    def change(f: dict[str, Any]) -> None:
        scenarios = f["baselines.json"]["scenarios"]
        scenarios[name] = scenarios.pop("tiny")

    return change


def rename_case(name: str) -> Change:
    return case(id=name)


def serve_args(value: Any) -> Change:
    return lambda f: f["cases.json"]["cases"][0]["frameworks"]["sglang"].update(serve_args=value)


def set_in(path: str, *keys: str | int, value: Any) -> Change:
    def change(f: dict[str, Any]) -> None:
        node = f[path]
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return change


def result_field(**fields: Any) -> Change:
    return lambda f: f["results.json"]["scenarios"][0].update(fields)


BASE_JSON = json.dumps(base_files()["baselines.json"])
DEEP = '{"metadata": ' + "[" * 100000 + "]" * 100000 + ', "scenarios": {}}'
HUGE_INT = BASE_JSON.replace('"expected_e2e_ms": 600000.0', '"expected_e2e_ms": ' + "9" * 5000)
RESULTS_DEEP = '{"version": 2, "scenarios": ' + "[" * 100000 + "]" * 100000 + "}"


def P(id: str, *args: str, expect: tuple[str, ...], change: Change | None = None, **kw: Any) -> Bad:
    return Bad(id, "pytest", (*PYTEST_ARGS, *args), expect, change, **kw)


def D(id: str, *args: str, expect: tuple[str, ...], change: Change | None = None, **kw: Any) -> Bad:
    return Bad(id, "diffperf", args, expect, change, **kw)


B = "baselines.json"
C = "cases.json"
T = "thresholds.json"
M = "gt/manifest.json"
R = "results.json"
TINY = "scenarios.tiny"

CASES = [
    # -- baseline files, through the plugin ------------------------------------------------------
    P("baseline-truncated", expect=(B, "invalid JSON"), raw={B: BASE_JSON[:40]}, subprocess=True),
    P("baseline-empty", expect=(B, "invalid JSON"), raw={B: ""}),
    P("baseline-not-utf8", expect=(B, "cannot read"), raw={B: b'{"a": "\xff\xfe"}'}),
    P("baseline-top-list", expect=(B, "expected a JSON object"), raw={B: "[]"}),
    P("baseline-top-null", expect=(B, "expected a JSON object"), raw={B: "null"}),
    P("baseline-duplicate-key", expect=(B, "duplicate key", "metadata"), raw={B: '{"metadata": {}, "metadata": {}}'}),
    P("baseline-nan", expect=(B, f"{TINY}.expected_e2e_ms"), raw={B: BASE_JSON.replace("600000.0", "NaN", 1)}),
    P("baseline-infinity", expect=(B, f"{TINY}.expected_e2e_ms"), raw={B: BASE_JSON.replace("600000.0", "Infinity")}),
    P("baseline-1e400", expect=(B, f"{TINY}.expected_e2e_ms"), raw={B: BASE_JSON.replace("600000.0", "1e400")}),
    P("baseline-1e308", expect=(B, f"{TINY}.expected_e2e_ms", "less than or equal"), change=scenario(expected_e2e_ms=1e308)),
    P("baseline-tolerance-1e308", expect=(B, "tolerances.pr_test.e2e"), change=set_in(B, "tolerances", "pr_test", "e2e", value=1e308)),
    D("lint-1e308", "lint", B, expect=(f"{B}:tiny:expected_e2e_ms", "less than or equal"), change=scenario(expected_e2e_ms=1e308)),
    P("baseline-negative", expect=(B, f"{TINY}.expected_e2e_ms"), change=scenario(expected_e2e_ms=-1.0)),
    P("baseline-string-number", expect=(B, f"{TINY}.expected_e2e_ms"), change=scenario(expected_e2e_ms="fast")),
    P("baseline-bool-number", expect=(B, f"{TINY}.expected_e2e_ms"), change=scenario(expected_e2e_ms=True)),
    P("baseline-no-sampling", expect=(B, "sampling"), change=lambda f: f[B].pop("sampling")),
    P("baseline-no-scenarios", expect=(B, "scenarios", "missing"), change=lambda f: f[B].pop("scenarios")),
    P("baseline-scenarios-list", expect=(B, "scenarios", "an object"), change=set_in(B, "scenarios", value=[])),
    P("baseline-scenario-null", expect=(B, TINY), change=set_in(B, "scenarios", "tiny", value=None)),
    P("baseline-negative-tolerance", expect=(B, "tolerances.pr_test.e2e"), change=set_in(B, "tolerances", "pr_test", "e2e", value=-0.5)),
    P("baseline-tolerances-string", expect=(B, "tolerances"), change=set_in(B, "tolerances", value="tight")),
    P("baseline-step-fraction-out-of-range", expect=(B, "sampling.step_fractions"), change=set_in(B, "sampling", "step_fractions", value=[0.0, 2.0])),
    P("baseline-key-empty", expect=(B, "scenarios.", "scenario key is empty"), change=rename_scenario("")),
    P("baseline-key-space", expect=(B, "flux tiny", "whitespace"), change=rename_scenario("flux tiny")),
    P("baseline-key-slash", expect=(B, "a/b", "path separator"), change=rename_scenario("a/b")),
    P("baseline-key-dotdot", expect=(B, "'..'"), change=rename_scenario("..")),
    P("baseline-key-escape", expect=(B, "../escape"), change=rename_scenario("../escape")),
    P("baseline-huge-int", expect=(B, "invalid JSON"), raw={B: HUGE_INT}),
    P("baseline-deep", expect=(B, "nested too deeply"), raw={B: DEEP}, subprocess=True),
    P("baseline-missing-file", "--diffperf-baselines=nope.json", expect=("nope.json", "not found")),
    P("baseline-unknown-profile", "--diffperf=nightly_x", expect=("nightly_x",)),
    # -- case files ------------------------------------------------------------------------------
    P("cases-truncated", expect=(C, "invalid JSON"), raw={C: '{"cases": [{"id": "tiny"'}),
    P("cases-empty", expect=(C, "invalid JSON"), raw={C: ""}),
    P("cases-top-list", expect=(C, "expected a JSON object"), raw={C: "[]"}),
    P("cases-missing-id", expect=(C, "cases.0.id", "missing"), change=drop_case_key("id")),
    P("cases-missing-model", expect=(C, "cases.0.model", "missing"), change=drop_case_key("model")),
    P("cases-width-string", expect=(C, "cases.0.width"), change=case(width="abc")),
    P("cases-width-zero", expect=(C, "cases.0.width"), change=case(width=0)),
    P("cases-steps-negative", expect=(C, "cases.0.num_inference_steps"), change=case(num_inference_steps=-4)),
    P("cases-duplicate-id", expect=(C, "cases.1.id", "duplicate"), change=lambda f: f[C]["cases"].append(tiny_case("tiny"))),
    P("cases-cases-object", expect=(C, "cases"), change=set_in(C, "cases", value={"tiny": {}})),
    P("cases-unknown-task", expect=(C, "cases.0.task"), change=case(task="text-to-3d")),
    P("cases-serve-args-list", expect=(C, "cases.0.frameworks.sglang.serve_args"), change=serve_args(["--a"])),
    P("cases-serve-args-quote", expect=(C, "cases.0.frameworks.sglang.serve_args", "No closing quotation"), change=serve_args("--warmup-mode 'server"), subprocess=True),
    P("cases-extra-env-int", expect=(C, "cases.0.frameworks.sglang.extra_env"), change=lambda f: f[C]["cases"][0]["frameworks"]["sglang"].update(extra_env=3)),
    P("cases-timeout-negative", expect=(C, "cases.0.timeout_s"), change=case(timeout_s=-1)),
    P("cases-repeat-zero", expect=(C, "cases.0.perf_repeat_requests"), change=case(perf_repeat_requests=0)),
    P("cases-warmup-negative", expect=(C, "cases.0.perf_warmup_requests"), change=case(perf_warmup_requests=-1)),
    P("cases-output-format-gif", expect=(C, "cases.0.output_format"), change=case(output_format="gif")),
    P("cases-num-gpus-zero", expect=(C, "cases.0.num_gpus"), change=case(num_gpus=0)),
    P("cases-prompt-null", expect=(C, "cases.0.prompt"), change=case(prompt=None)),
    P("cases-request-extra-list", expect=(C, "cases.0.sglang_request_extra"), change=case(sglang_request_extra=[1])),
    P("cases-guidance-nan", expect=(C, "cases.0.guidance_scale"), raw={C: json.dumps({"cases": [tiny_case("tiny")]}).replace('"seed": 1', '"seed": 1, "guidance_scale": NaN')}),
    P("cases-id-empty", expect=(C, "cases.0.id", "is empty"), change=rename_case("")),
    P("cases-id-traversal", expect=(C, "cases.0.id", "../../x"), change=rename_case("../../x")),
    P("cases-id-absolute", expect=(C, "cases.0.id", "path separator"), change=rename_case("/tmp/pwned")),
    P("cases-id-space", expect=(C, "cases.0.id", "whitespace"), change=rename_case("flux tiny")),
    P("cases-id-mixed", expect=(C, "cases.0.id"), change=rename_case("a/../../b")),
    P("cases-id-backslash", expect=(C, "cases.0.id", "path separator"), change=rename_case("..\\x")),
    P("cases-id-dotdot", expect=(C, "cases.0.id", "'..'"), change=rename_case("a..b")),
    P("cases-missing-file", "--diffperf-cases=nope.json", expect=("nope.json", "not found")),
    # -- threshold files (read when outputs are compared) ----------------------------------------
    P("thresholds-truncated", *THRESHOLDS, expect=(T, "invalid JSON"), raw={T: '{"cases": {'}),
    P("thresholds-empty", *THRESHOLDS, expect=(T, "invalid JSON"), raw={T: ""}),
    P("thresholds-negative", *THRESHOLDS, expect=(T, "cases.tiny.psnr_threshold"), change=set_in(T, "cases", "tiny", "psnr_threshold", value=-3)),
    P("thresholds-string", *THRESHOLDS, expect=(T, "cases.tiny.psnr_threshold"), change=set_in(T, "cases", "tiny", "psnr_threshold", value="high")),
    P("thresholds-nan", *THRESHOLDS, expect=(T, "default_ssim_threshold_image"), raw={T: '{"default_ssim_threshold_image": NaN, "cases": {}}'}),
    P("thresholds-out-of-range", *THRESHOLDS, expect=(T, "default_ssim_threshold_image"), change=set_in(T, "default_ssim_threshold_image", value=7.0)),
    P("thresholds-cases-list", *THRESHOLDS, expect=(T, "cases"), change=set_in(T, "cases", value=[])),
    P("thresholds-missing-file", *CONSISTENCY, "--diffperf-thresholds=nope.json", expect=("nope.json",)),
    # -- ground truth: checked before any server starts ------------------------------------------
    P("gt-manifest-truncated", *CONSISTENCY, expect=(M, "invalid JSON"), raw={M: '{"format": 1, "files": {'}),
    P("gt-manifest-empty", *CONSISTENCY, expect=(M, "invalid JSON"), raw={M: ""}),
    P("gt-manifest-files-list", *CONSISTENCY, expect=(M, "files", "an object"), change=set_in(M, "files", value=[])),
    P("gt-manifest-bad-sha", *CONSISTENCY, expect=(M, "files.tiny_1gpu.png.sha256"), change=set_in(M, "files", "tiny_1gpu.png", "sha256", value="xyz")),
    P("gt-manifest-format-2", *CONSISTENCY, expect=(M, "format"), change=set_in(M, "format", value=2)),
    P("gt-file-symlink-out", *CONSISTENCY, expect=("tiny_1gpu.png", "outside the ground-truth folder"), links={"gt/tiny_1gpu.png": "../cases.json"}),
    P("gt-file-not-image", *CONSISTENCY, expect=("tiny_1gpu.png", "not a readable image"), raw={"gt/tiny_1gpu.png": b"not a png at all"}),
    P("gt-folder-missing", "--diffperf-gt-dir=nope", "--diffperf-clip-model=diffperf-tiny", "--diffperf-clip-pretrained=none", expect=("--diffperf-gt-dir", "nope"), subprocess=True),
    P("gt-frames-every-0", *CONSISTENCY, "--diffperf-frames=every:0", expect=("every:0",)),
    P("gt-unknown-clip", "--diffperf-gt-dir=gt", "--diffperf-clip-model=NoSuchCLIP", expect=("NoSuchCLIP",)),
    # -- options ---------------------------------------------------------------------------------
    P("opt-request-timeout-inf", "--diffperf-request-timeout=inf", expect=("--diffperf-request-timeout", "'inf'"), subprocess=True),
    P("opt-request-timeout-nan", "--diffperf-request-timeout=nan", expect=("--diffperf-request-timeout", "'nan'")),
    P("opt-request-timeout-negative", "--diffperf-request-timeout=-1", expect=("--diffperf-request-timeout", "'-1'")),
    P("opt-startup-timeout-text", "--diffperf-startup-timeout=abc", expect=("--diffperf-startup-timeout", "'abc'")),
    P("opt-startup-timeout-zero", "--diffperf-startup-timeout=0", expect=("--diffperf-startup-timeout", "'0'")),
    P("opt-devices-empty-entries", "--diffperf-devices=,,", expect=("--diffperf-devices", "',,'")),
    P("opt-devices-duplicate", "--diffperf-devices=0,0", expect=("--diffperf-devices", "listed twice")),
    P("opt-profile-empty", "--diffperf=", expect=("--diffperf", "expected a tolerance profile")),
    P("opt-json-unwritable", "--diffperf-json=/proc/nope/results.json", expect=("--diffperf-json", "/proc/nope")),
    P("opt-json-folder", "--diffperf-json=empty", expect=("--diffperf-json", "is a folder")),
    P("opt-shard-over", "--diffperf-shard=3/2", expect=("--diffperf-shard", "3/2")),
    P("opt-shard-zero", "--diffperf-shard=0/2", expect=("--diffperf-shard", "0/2")),
    P("opt-shard-text", "--diffperf-shard=a/b", expect=("--diffperf-shard", "a/b")),
    P("opt-shard-id-alone", "--diffperf-shard-id=1", expect=("--diffperf-num-shards",)),
    P("opt-regen-policy", "--regen-baselines", "--regen-policy=nope", expect=("--regen-policy", "nope")),
    P("opt-regen-min-improvement", "--regen-baselines", "--regen-min-improvement=abc", expect=("--regen-min-improvement", "abc")),
    P("opt-unknown-hardware", "--diffperf-hardware=quantum9", expect=("quantum9",)),
    P("opt-unknown-server", "--diffperf-server=nope", expect=("--diffperf-server", "nope")),
    P("opt-unknown-preset", "--diffperf-preset=nope", expect=("nope",)),
    P("opt-ab-servers", "--diffperf-base=current", "--diffperf-ab-servers=sideways", expect=("--diffperf-ab-servers", "sideways")),
    P("opt-inconclusive", "--diffperf-inconclusive=maybe", expect=("--diffperf-inconclusive", "maybe")),
    P("opt-remeasure", "--diffperf-remeasure=-2", expect=("--diffperf-remeasure", "-2")),
    # -- diffperf lint / show / plan -------------------------------------------------------------
    D("lint-empty-folder", "lint", "empty", expect=("empty", "no JSON files")),
    D("lint-missing", "lint", "nope.json", expect=("nope.json", "not found")),
    D("lint-huge-int", "lint", B, expect=(B, "invalid JSON"), raw={B: HUGE_INT}),
    D("lint-deep", "lint", B, expect=(B, "nested too deeply"), raw={B: DEEP}),
    D("lint-negative", "lint", B, expect=(f"{B}:tiny:expected_e2e_ms", "-1.0"), change=scenario(expected_e2e_ms=-1.0), subprocess=True),
    D("lint-bad-key", "lint", B, expect=(B, "a b", "whitespace"), change=rename_scenario("a b")),
    D("show-unknown-scenario", "show", B, "nope", expect=("nope",)),
    D("show-unknown-profile", "show", B, "--profile", "nightly_x", expect=("nightly_x",)),
    D("show-deep", "show", B, expect=(B, "nested too deeply"), raw={B: DEEP}),
    D("show-num-frames-negative", "show", B, "--num-frames", "-1", expect=("--num-frames", "-1")),
    D("plan-shards-zero", "plan", B, "--shards", "0", expect=("--shards", "0")),
    D("plan-target-time-negative", "plan", B, "--target-time", "-1", expect=("--target-time", "-1")),
    D("plan-target-time-inf", "plan", B, "--target-time", "inf", expect=("--target-time", "inf")),
    D("plan-missing", "plan", "nope.json", expect=("nope.json", "not found")),
    D("plan-bad-cases", "plan", B, "--cases", C, expect=(C, "cases.0.id"), change=rename_case("../x")),
    # -- diffperf merge --------------------------------------------------------------------------
    D("merge-verdict-upper", "merge", R, expect=(R, "scenarios.0.verdict"), change=result_field(verdict="FAIL"), subprocess=True),
    D("merge-verdict-failed", "merge", R, expect=(R, "scenarios.0.verdict"), change=result_field(verdict="failed")),
    D("merge-verdict-error-upper", "merge", R, expect=(R, "scenarios.0.verdict"), change=result_field(verdict="ERROR")),
    D("merge-verdict-empty", "merge", R, expect=(R, "scenarios.0.verdict"), change=result_field(verdict="")),
    D("merge-verdict-maybe", "merge", R, expect=(R, "scenarios.0.verdict"), change=result_field(verdict="maybe")),
    D("merge-deep", "merge", R, expect=(R, "nested too deeply"), raw={R: RESULTS_DEEP}),
    D("merge-truncated", "merge", R, expect=(R, "invalid JSON"), raw={R: '{"version": 2'}),
    D("merge-version-99", "merge", R, expect=(R, "version"), change=set_in(R, "version", value=99)),
    D("merge-output-folder", "merge", R, "-o", "empty", expect=("-o", "is a folder")),
    D("merge-output-unwritable", "merge", R, "-o", "/proc/nope/merged.json", expect=("-o", "/proc/nope")),
    D("merge-markdown-unwritable", "merge", R, "--markdown", "/proc/nope/x.md", expect=("--markdown", "/proc/nope")),
    D("merge-missing", "merge", "nope.json", expect=("nope.json", "not found")),
    # -- diffperf compare / import-cases ---------------------------------------------------------
    D("compare-serve-args-quote", "compare", "--config", C, "--dry-run", expect=(C, "serve_args", "No closing quotation"), change=serve_args("--x 'y")),
    D("compare-repeats-zero", "compare", "--config", C, "--measurement-repeats", "0", "--dry-run", expect=("--measurement-repeats",)),
    D("compare-unknown-case", "compare", "--config", C, "--case-ids", "nope", "--dry-run", expect=("nope",)),
    D("compare-output-unwritable", "compare", "--config", C, "--output", "/proc/nope/r.json", expect=("/proc/nope",)),
    D("compare-startup-timeout", "compare", "--config", C, "--startup-timeout", "-1", "--dry-run", expect=("--startup-timeout",)),
    D("import-missing", "import-cases", "nope_dir/gpu_cases.py", expect=("nope_dir",)),
    D("import-output-unwritable", "import-cases", str(GPU_CASES), "-o", "/proc/nope/c.json", expect=("--output", "/proc/nope")),
]  # fmt: skip


def materialize(root: Path, bad: Bad) -> None:
    files = base_files()
    if bad.change is not None:
        tree = copy.deepcopy(files)
        bad.change(tree)
        files = tree
    files.update(bad.raw)
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name in bad.links:
            path.symlink_to(bad.links[name])
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_text(json.dumps(content, indent=2), encoding="utf-8")


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (links as their target), by hash."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if "__pycache__" in rel or ".pytest_cache" in rel:
            continue
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


def real_process(bad: Bad, root: Path) -> subprocess.Popen[str]:
    """The case as a real process (python -m pytest / python -m pytest_diffperf.cli) in ``root``, started."""
    program = ["-m", "pytest"] if bad.entry == "pytest" else ["-m", "pytest_diffperf.cli"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.Popen(
        [sys.executable, *program, *bad.args],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


def run_in_process(bad: Bad, root: Path, pytester: pytest.Pytester | None) -> tuple[int, str]:
    """The case in this process: pytester for the plugin, the CLI's main for ``diffperf``."""
    if bad.entry == "pytest":
        assert pytester is not None
        result = pytester.runpytest(*bad.args)
        return int(result.ret), result.stdout.str() + "\n" + result.stderr.str()
    done = diffperf(*bad.args, cwd=root, env={k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"})
    return done.returncode, done.stdout + done.stderr


@dataclass(frozen=True)
class Ran:
    """What one case's run did: its exit status, its output, and the files before and after it."""

    code: int
    out: str
    before: dict[str, str]
    after: dict[str, str]


def in_process(bad: Bad, root: Path, pytester: pytest.Pytester | None) -> Ran:
    """The case's files written into ``root``, then the case run in this process."""
    materialize(root, bad)
    before = snapshot(root)
    code, out = run_in_process(bad, root, pytester)
    return Ran(code, out, before, snapshot(root))


def check(bad: Bad, result: Ran) -> None:
    assert result.code != 0, result.out
    assert "Traceback" not in result.out and "INTERNALERROR" not in result.out, result.out
    missing = [text for text in bad.expect if text not in result.out]
    assert not missing, f"the message lacks {missing}:\n{result.out}"
    assert result.after == result.before, "files on disk changed"


REAL_PROCESS_CASES = [b for b in CASES if b.subprocess]


@pytest.fixture(scope="module")
def real_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """The real-process cases this session runs, run side by side (a process each: startup is most of their
    time), by case id."""
    selected = {
        item.callspec.id
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.originalname == "test_malformed_input_in_a_real_process"
    }
    started = {}
    for bad in REAL_PROCESS_CASES:
        if bad.id in selected:
            root = tmp_path_factory.mktemp(bad.id)
            materialize(root, bad)
            started[bad.id] = (root, snapshot(root), real_process(bad, root))
    runs = {}
    for case_id, (root, before, proc) in started.items():
        out, _ = proc.communicate()
        runs[case_id] = Ran(proc.returncode, out, before, snapshot(root))
    return runs


def test_the_table_is_large_and_covers_every_entry_point():
    assert len(CASES) >= 80
    assert len({bad.id for bad in CASES}) == len(CASES)
    commands = {bad.args[0] for bad in CASES if bad.entry == "diffperf"}
    assert commands == {"lint", "show", "plan", "merge", "compare", "import-cases"}


@pytest.mark.parametrize("bad", CASES, ids=lambda bad: bad.id)
def test_malformed_input_is_one_clear_error(bad: Bad, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    check(bad, in_process(bad, pytester.path, pytester))


@pytest.mark.parametrize("bad", REAL_PROCESS_CASES, ids=lambda bad: bad.id)
def test_malformed_input_in_a_real_process(bad: Bad, real_runs: dict[str, Ran]):
    check(bad, real_runs[bad.id])
