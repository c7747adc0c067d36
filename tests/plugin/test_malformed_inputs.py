"""Every malformed input is one clear error: through the real entry points (the plugin, in pytester, and every
``diffperf`` subcommand, in-process; a few of each as real subprocesses), each case of the table must exit
non-zero, print no traceback, name the file or option and the key, and leave every file on disk as it was.

The inputs are small valid files (a baseline, a case file, thresholds, a ground-truth folder with its manifest,
a results file) with one thing broken per case. The plugin runs with ``--co``: nothing may start a server.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from PIL import Image

from pytest_diffperf import plugin
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
    dirs: tuple[str, ...] = ()  # files replaced by an empty folder (a folder where a file belongs)
    modes: Mapping[str, int] = field(default_factory=dict)  # permission bits set after writing (unreadable)
    env: Mapping[str, str] = field(default_factory=dict)  # environment variables of the run
    copies: Mapping[str, Path] = field(default_factory=dict)  # folders copied in (SGLang's case lists)
    appends: Mapping[str, str] = field(default_factory=dict)  # text appended to a copied file


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
    P("thresholds-audio-negative", *THRESHOLDS, expect=(T, "default_audio_rms_db_diff_threshold"), change=set_in(T, "default_audio_rms_db_diff_threshold", value=-1)),
    P("thresholds-audio-case-string", *THRESHOLDS, expect=(T, "cases.tiny.audio_duration_diff_threshold"), change=set_in(T, "cases", "tiny", "audio_duration_diff_threshold", value="long")),
    P("thresholds-missing-file", *CONSISTENCY, "--diffperf-thresholds=nope.json", expect=("nope.json",)),
    # -- ground truth: checked before any server starts ------------------------------------------
    P("gt-manifest-truncated", *CONSISTENCY, expect=(M, "invalid JSON"), raw={M: '{"format": 1, "files": {'}),
    P("gt-manifest-empty", *CONSISTENCY, expect=(M, "invalid JSON"), raw={M: ""}),
    P("gt-manifest-files-list", *CONSISTENCY, expect=(M, "files", "an object"), change=set_in(M, "files", value=[])),
    P("gt-manifest-bad-sha", *CONSISTENCY, expect=(M, "files.tiny_1gpu.png.sha256"), change=set_in(M, "files", "tiny_1gpu.png", "sha256", value="xyz")),
    P("gt-manifest-format-2", *CONSISTENCY, expect=(M, "format"), change=set_in(M, "format", value=2)),
    P("gt-file-symlink-out", *CONSISTENCY, expect=("tiny_1gpu.png", "outside the ground-truth folder"), links={"gt/tiny_1gpu.png": "../cases.json"}),
    P("gt-file-not-image", *CONSISTENCY, expect=("tiny_1gpu.png", "sha256", M), raw={"gt/tiny_1gpu.png": b"not a png at all"}),
    P("gt-folder-missing", "--diffperf-gt-dir=nope", "--diffperf-clip-model=diffperf-tiny", "--diffperf-clip-pretrained=none", expect=("--diffperf-gt-dir", "nope"), subprocess=True),
    P("gt-frames-every-0", *CONSISTENCY, "--diffperf-frames=every:0", expect=("every:0",)),
    P("gt-github-malformed", "--diffperf-gt-dir=github:sgl-project", expect=("--diffperf-gt-dir", "github:OWNER/REPO@REVISION", "'github:sgl-project'")),
    P("gt-github-dotdot", "--diffperf-gt-dir=github:a/b@c:../x", expect=("--diffperf-gt-dir", "'..'")),
    P("gt-url-no-host", "--diffperf-gt-dir=https://", expect=("--diffperf-gt-dir", "consistency_gt folder")),
    P("gt-pinned-with-json-cases", "--diffperf-gt-dir=sglang", "--diffperf-clip-model=diffperf-tiny", "--diffperf-clip-pretrained=none", expect=("--diffperf-gt-dir", "case lists' release")),
    P("gt-backoff-text", "--diffperf-gt-dir=github:a/b@c", "--diffperf-clip-model=diffperf-tiny", "--diffperf-clip-pretrained=none", expect=("DIFFPERF_GT_BACKOFF_S", "'soon'"), env={"DIFFPERF_GT_BACKOFF_S": "soon"}),
    P("gt-regen-into-github", "--regen-ground-truth", "--diffperf-gt-dir=github:a/b@c", "--diffperf-clip-model=diffperf-tiny", "--diffperf-clip-pretrained=none", expect=("--diffperf-gt-dir", "writes into a local folder")),
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


# -- issue 26: the corpus, by kind -------------------------------------------------------------------------------
CASES_JSON = json.dumps({"cases": [tiny_case("tiny")]})
RESULTS_JSON = json.dumps(base_files()["results.json"])
MANIFEST_JSON = json.dumps(base_files()["gt/manifest.json"])
SGLANG_SRC = GPU_CASES.parents[4]  # holds the sglang package folder
SG_DIR = "sg/sglang/multimodal_gen/test/server"  # a copy of SGLang's case lists in the run's folder
SG = f"{SG_DIR}/gpu_cases.py"
HIST = ("history/r.json",)


def bomb_png(width: int = 20000, height: int = 20000) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` pixels (PIL refuses it unread: a decompression bomb)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b"")
    )


BOMB = bomb_png()


def manifest_for(data: bytes) -> Change:
    return set_in(M, "files", "tiny_1gpu.png", value={"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)})


def framework(**fields: Any) -> Change:
    return lambda f: f[C]["cases"][0]["frameworks"]["sglang"].update(fields)


def env(**variables: str) -> Change:
    return framework(extra_env=dict(variables))


def history_file(change: Change | None = None) -> Change:
    def make(f: dict[str, Any]) -> None:
        doc = copy.deepcopy(f[R])
        f["history/r.json"] = doc
        if change is not None:
            change({R: doc})

    return make


def ini(text: str) -> dict[str, str]:
    return {"pytest.ini": "[pytest]\n" + text + "\n"}


CASES += [
    # -- baselines: truncated, wrong type, wrong nesting, empty, NaN, huge, unicode -------------------------------
    P("c26-baseline-cut-10", expect=(B, "invalid JSON"), raw={B: BASE_JSON[:10]}),
    P("c26-baseline-cut-100", expect=(B, "invalid JSON"), raw={B: BASE_JSON[:100]}),
    P("c26-baseline-cut-300", expect=(B, "invalid JSON"), raw={B: BASE_JSON[:300]}),
    P("c26-baseline-trailing-garbage", expect=(B, "invalid JSON"), raw={B: BASE_JSON + "x"}),
    P("c26-baseline-bom", expect=(B, "invalid JSON"), raw={B: "\ufeff" + BASE_JSON}),
    P("c26-baseline-whitespace", expect=(B, "invalid JSON"), raw={B: "  \n\t "}),
    P("c26-baseline-top-string", expect=(B, "expected a JSON object"), raw={B: '"baselines"'}),
    P("c26-baseline-top-number", expect=(B, "expected a JSON object"), raw={B: "3"}),
    P("c26-baseline-metadata-list", expect=(B, "metadata"), change=set_in(B, "metadata", value=[])),
    P("c26-baseline-sampling-list", expect=(B, "sampling"), change=set_in(B, "sampling", value=[0.5])),
    P("c26-baseline-fractions-string", expect=(B, "sampling.step_fractions"), change=set_in(B, "sampling", "step_fractions", value="0,0.5")),
    P("c26-baseline-fractions-text", expect=(B, "sampling.step_fractions"), change=set_in(B, "sampling", "step_fractions", value=["half"])),
    P("c26-baseline-fraction-nan", expect=(B, "sampling.step_fractions"), raw={B: BASE_JSON.replace("[0.0, 0.5, 1.0]", "[0.0, NaN]")}),
    P("c26-baseline-profile-list", expect=(B, "tolerances.pr_test"), change=set_in(B, "tolerances", "pr_test", value=[2.0])),
    P("c26-baseline-tolerance-string", expect=(B, "tolerances.pr_test.e2e"), change=set_in(B, "tolerances", "pr_test", "e2e", value="2")),
    P("c26-baseline-tolerance-neg-inf", expect=(B, "tolerances.pr_test.e2e"), raw={B: BASE_JSON.replace('"e2e": 2.0', '"e2e": -Infinity', 1)}),
    P("c26-baseline-tolerance-huge-int", expect=(B, "invalid JSON"), raw={B: BASE_JSON.replace('"e2e": 2.0', '"e2e": ' + "7" * 6000, 1)}),
    P("c26-baseline-stages-list", expect=(B, f"{TINY}.stages_ms"), change=scenario(stages_ms=[1.0])),
    P("c26-baseline-stage-string", expect=(B, f"{TINY}.stages_ms.DenoisingStage"), change=scenario(stages_ms={"DenoisingStage": "fast"})),
    P("c26-baseline-stage-nan", expect=(B, f"{TINY}.stages_ms"), raw={B: BASE_JSON.replace('"stages_ms": {}', '"stages_ms": {"DenoisingStage": NaN}')}),
    P("c26-baseline-stage-1e400", expect=(B, f"{TINY}.stages_ms"), raw={B: BASE_JSON.replace('"stages_ms": {}', '"stages_ms": {"DenoisingStage": 1e400}')}),
    P("c26-baseline-steps-list", expect=(B, f"{TINY}.denoise_step_ms"), change=scenario(denoise_step_ms=[1.0])),
    P("c26-baseline-step-key-text", expect=(B, f"{TINY}.denoise_step_ms"), change=scenario(denoise_step_ms={"first": 1.0})),
    P("c26-baseline-step-negative", expect=(B, f"{TINY}.denoise_step_ms"), change=scenario(denoise_step_ms={"0": -1.0})),
    P("c26-baseline-avg-null", expect=(B, f"{TINY}.expected_avg_denoise_ms"), change=scenario(expected_avg_denoise_ms=None)),
    P("c26-baseline-median-list", expect=(B, f"{TINY}.expected_median_denoise_ms"), change=scenario(expected_median_denoise_ms=[1])),
    P("c26-baseline-e2e-object", expect=(B, f"{TINY}.expected_e2e_ms"), change=scenario(expected_e2e_ms={"ms": 1})),
    P("c26-baseline-e2e-zero-string", expect=(B, f"{TINY}.expected_e2e_ms"), change=scenario(expected_e2e_ms="")),
    P("c26-baseline-scenario-empty", expect=(B, TINY), change=set_in(B, "scenarios", "tiny", value={})),
    P("c26-baseline-scenario-list", expect=(B, TINY), change=set_in(B, "scenarios", "tiny", value=[GENEROUS])),
    P("c26-baseline-scenario-nested", expect=(B, TINY), change=set_in(B, "scenarios", "tiny", value={"tiny": dict(GENEROUS)})),
    P("c26-baseline-scenarios-string", expect=(B, "scenarios"), change=set_in(B, "scenarios", value="tiny")),
    P("c26-baseline-scenarios-null", expect=(B, "scenarios"), change=set_in(B, "scenarios", value=None)),
    P("c26-baseline-key-non-ascii", expect=(B, "tïny"), change=rename_scenario("tïny")),
    P("c26-baseline-key-zero-width", expect=(B, "scenarios."), change=rename_scenario("ti\u200bny")),
    P("c26-baseline-key-rtl", expect=(B, "scenarios."), change=rename_scenario("tiny\u202e")),
    P("c26-baseline-key-emoji", expect=(B, "scenarios."), change=rename_scenario("tiny\U0001f680")),
    P("c26-baseline-key-300", expect=(B, "300 characters"), change=rename_scenario("t" * 300)),
    P("c26-baseline-key-nul", expect=(B, "scenarios."), change=rename_scenario("ti\0ny")),
    P("c26-baseline-latin1", expect=(B, "cannot read"), raw={B: BASE_JSON.replace('"cpu"', '"c\xe9pu"').encode("latin-1")}),
    P("c26-baseline-folder-empty", "--diffperf-baselines=empty", expect=("empty",)),
    P("c26-baseline-broken-link", expect=("nowhere.json", "not found"), links={B: "nowhere.json"}),
    P("c26-baseline-unreadable", expect=(B, "cannot read"), modes={B: 0}),
    # -- case files -----------------------------------------------------------------------------------------------
    P("c26-cases-cut-20", expect=(C, "invalid JSON"), raw={C: CASES_JSON[:20]}),
    P("c26-cases-cut-120", expect=(C, "invalid JSON"), raw={C: CASES_JSON[:120]}),
    P("c26-cases-top-null", expect=(C, "expected a JSON object"), raw={C: "null"}),
    P("c26-cases-height-string", expect=(C, "cases.0.height"), change=case(height="x")),
    P("c26-cases-frames-string", expect=(C, "cases.0.num_frames"), change=case(num_frames="5")),
    P("c26-cases-seed-float", expect=(C, "cases.0.seed"), change=case(seed=1.5)),
    P("c26-cases-fps-string", expect=(C, "cases.0.fps"), change=case(fps="24")),
    P("c26-cases-model-int", expect=(C, "cases.0.model"), change=case(model=5)),
    P("c26-cases-task-int", expect=(C, "cases.0.task"), change=case(task=3)),
    P("c26-cases-prompt-int", expect=(C, "cases.0.prompt"), change=case(prompt=5)),
    P("c26-cases-prompt-list", expect=(C, "cases.0.prompt"), change=case(prompt=["a", "b"])),
    P("c26-cases-format-int", expect=(C, "cases.0.output_format"), change=case(output_format=5)),
    P("c26-cases-gpus-string", expect=(C, "cases.0.num_gpus"), change=case(num_gpus="2")),
    P("c26-cases-request-extra-string", expect=(C, "cases.0.sglang_request_extra"), change=case(sglang_request_extra="x")),
    P("c26-cases-perf-check-string", expect=(C, "cases.0.run_perf_check"), change=case(run_perf_check="yes")),
    P("c26-cases-repeat-float", expect=(C, "cases.0.perf_repeat_requests"), change=case(perf_repeat_requests=1.5)),
    P("c26-cases-timeout-string", expect=(C, "cases.0.timeout_s"), change=case(timeout_s="60")),
    P("c26-cases-timeout-nan", expect=(C, "cases.0.timeout_s"), raw={C: CASES_JSON.replace('"timeout_s": 120', '"timeout_s": NaN')}),
    P("c26-cases-timeout-1e300", expect=(C, "cases.0.timeout_s"), change=case(timeout_s=1e300)),
    P("c26-cases-timeout-1e9", expect=(C, "cases.0.timeout_s"), change=case(timeout_s=1e9)),
    P("c26-cases-timeout-zero", expect=(C, "cases.0.timeout_s"), change=case(timeout_s=0)),
    P("c26-cases-guidance-inf", expect=(C, "cases.0.guidance_scale"), raw={C: CASES_JSON.replace('"seed": 1', '"seed": 1, "guidance_scale": Infinity')}),
    P("c26-cases-frameworks-list", expect=(C, "cases.0.frameworks"), change=case(frameworks=["sglang"])),
    P("c26-cases-framework-string", expect=(C, "cases.0.frameworks.sglang"), change=case(frameworks={"sglang": "--x"})),
    P("c26-cases-extra-env-list", expect=(C, "cases.0.frameworks.sglang.extra_env"), change=framework(extra_env=["A=1"])),
    P("c26-cases-env-value-int", expect=(C, "cases.0.frameworks.sglang.extra_env"), change=env(A=1)),  # type: ignore[arg-type]
    P("c26-cases-env-name-equals", expect=(C, "cases.0.frameworks.sglang.extra_env", "'A=B'"), change=env(**{"A=B": "1"})),
    P("c26-cases-env-name-nul", expect=(C, "cases.0.frameworks.sglang.extra_env", "NUL"), change=env(**{"A\0B": "1"})),
    P("c26-cases-env-name-empty", expect=(C, "cases.0.frameworks.sglang.extra_env"), change=env(**{"": "1"})),
    P("c26-cases-env-value-nul", expect=(C, "cases.0.frameworks.sglang.extra_env", "NUL"), change=env(A="x\0y")),
    P("c26-cases-serve-args-int", expect=(C, "cases.0.frameworks.sglang.serve_args"), change=serve_args(3)),
    P("c26-cases-serve-args-dquote", expect=(C, "cases.0.frameworks.sglang.serve_args", "No closing quotation"), change=serve_args('--x "y')),
    P("c26-cases-case-empty", expect=(C, "cases.0.id", "missing"), change=set_in(C, "cases", value=[{}])),
    P("c26-cases-case-list", expect=(C, "cases.0"), change=set_in(C, "cases", value=[[tiny_case("tiny")]])),
    P("c26-cases-case-string", expect=(C, "cases.0"), change=set_in(C, "cases", value=["tiny"])),
    P("c26-cases-nested-twice", expect=(C, "cases"), change=set_in(C, "cases", value={"cases": [tiny_case("tiny")]})),
    P("c26-cases-id-int", expect=(C, "cases.0.id"), change=rename_case(5)),  # type: ignore[arg-type]
    P("c26-cases-id-non-ascii", expect=(C, "cases.0.id", "tïny"), change=rename_case("tïny")),
    P("c26-cases-id-rtl", expect=(C, "cases.0.id"), change=rename_case("tiny\u202egnp.exe")),
    P("c26-cases-id-emoji", expect=(C, "cases.0.id"), change=rename_case("tiny\U0001f680")),
    P("c26-cases-id-300", expect=(C, "cases.0.id", "300 characters"), change=rename_case("t" * 300)),
    P("c26-cases-id-dot", expect=(C, "cases.0.id"), change=rename_case(".")),
    P("c26-cases-id-leading-dash", expect=(C, "cases.0.id"), change=rename_case("-tiny")),
    P("c26-cases-folder", "--diffperf-cases=empty", expect=("empty", "gpu_cases.py")),
    P("c26-cases-broken-link", expect=("nowhere.json", "not found"), links={C: "nowhere.json"}),
    P("c26-cases-unreadable", expect=(C, "cannot read"), modes={C: 0}),
    P("c26-cases-not-gpu-cases-py", "--diffperf-cases=tests.py", expect=("tests.py", "gpu_cases.py"), raw={"tests.py": "x = 1\n"}),
    P("c26-cases-sglang-systemexit", f"--diffperf-cases={SG}", expect=(SG, "sys.exit(0)"), copies={"sg": SGLANG_SRC}, appends={SG: "\nraise SystemExit(0)\n"}),
    P("c26-cases-sglang-syntax", f"--diffperf-cases={SG}", expect=(SG, "SyntaxError"), copies={"sg": SGLANG_SRC}, appends={SG: "\ndef (\n"}),
    # -- options: superscripts, huge and empty values, outputs that are inputs ---------------------------------------
    P("c26-opt-shard-superscript-n", "--diffperf-shard=1/²", expect=("--diffperf-shard", "'1/²'")),
    P("c26-opt-shard-superscript-k", "--diffperf-shard=²/2", expect=("--diffperf-shard", "'²/2'")),
    P("c26-opt-shard-arabic", "--diffperf-shard=\u0661/\u0662", expect=("--diffperf-shard",)),
    P("c26-opt-shard-id-superscript", "--diffperf-shard-id=²", "--diffperf-num-shards=2", expect=("--diffperf-shard-id",)),
    P("c26-opt-shard-float", "--diffperf-shard=1.0/2", expect=("--diffperf-shard", "1.0/2")),
    P("c26-opt-frames-every-superscript", *CONSISTENCY, "--diffperf-frames=every:²", expect=("--diffperf-frames", "'²'")),
    P("c26-opt-frames-index-superscript", *CONSISTENCY, "--diffperf-frames=first,³", expect=("--diffperf-frames", "'³'")),
    P("c26-opt-frames-negative", *CONSISTENCY, "--diffperf-frames=-1", expect=("--diffperf-frames", "'-1'")),
    P("c26-opt-frames-twice", *CONSISTENCY, "--diffperf-frames=first,first", expect=("--diffperf-frames", "twice")),
    P("c26-opt-request-timeout-1e300", "--diffperf-request-timeout=1e300", expect=("--diffperf-request-timeout", "'1e300'")),
    P("c26-opt-startup-timeout-1e300", "--diffperf-startup-timeout=1e300", expect=("--diffperf-startup-timeout", "'1e300'")),
    P("c26-opt-progress-every-1e300", "--diffperf-progress-every=1e300", expect=("--diffperf-progress-every", "'1e300'")),
    P("c26-opt-startup-timeout-superscript", "--diffperf-startup-timeout=²", expect=("--diffperf-startup-timeout", "'²'")),
    P("c26-opt-log-tail-text", "--diffperf-log-tail=abc", expect=("--diffperf-log-tail", "'abc'")),
    P("c26-opt-log-tail-float", "--diffperf-log-tail=1.5", expect=("--diffperf-log-tail", "'1.5'")),
    P("c26-opt-log-tail-superscript", "--diffperf-log-tail=²", expect=("--diffperf-log-tail", "'²'")),
    P("c26-opt-base-empty", "--diffperf-base=", expect=("--diffperf-base", "got nothing")),
    P("c26-opt-base-blank", "--diffperf-base= ; ", expect=("--diffperf-base", "empty SPEC")),
    P("c26-opt-base-env-name", "--diffperf-base=env=A-B=1", expect=("--diffperf-base", "env=NAME=VALUE")),
    P("c26-opt-base-unknown-key", "--diffperf-base=pyhton=/usr/bin/python3", expect=("--diffperf-base", "pyhton")),
    P("c26-opt-base-args-quote", "--diffperf-base=args=--x 'y", expect=("--diffperf-base", "shell words")),
    P("c26-opt-candidate-empty", "--diffperf-base=current", "--diffperf-candidate=", expect=("--diffperf-candidate", "got nothing")),
    P("c26-opt-cases-empty", "--diffperf-cases=", expect=("--diffperf-cases", "got nothing")),
    P("c26-opt-baselines-empty", "--diffperf-baselines=", expect=("--diffperf-baselines", "got nothing")),
    P("c26-opt-hardware-empty", "--diffperf-hardware=", expect=("--diffperf-hardware", "got nothing")),
    P("c26-opt-json-empty", "--diffperf-json=", expect=("--diffperf-json", "got nothing")),
    P("c26-opt-devices-empty", "--diffperf-devices=", expect=("--diffperf-devices", "got nothing")),
    P("c26-opt-gt-dir-empty", "--diffperf-gt-dir=", expect=("--diffperf-gt-dir", "got nothing")),
    P("c26-opt-devices-blank-entry", "--diffperf-devices=0, ,1", expect=("--diffperf-devices",)),
    P("c26-opt-ab-request-pairs-zero", "--diffperf-base=current", "--diffperf-ab-request-pairs=0", expect=("--diffperf-ab-request-pairs", "0")),
    P("c26-opt-ab-max-requests-text", "--diffperf-base=current", "--diffperf-ab-max-requests=abc", expect=("--diffperf-ab-max-requests", "abc")),
    P("c26-opt-ab-tolerance-text", "--diffperf-base=current", "--diffperf-ab-tolerance=abc", expect=("--diffperf-ab-tolerance", "abc")),
    P("c26-opt-static-noise", "--diffperf-static-noise=sometimes", expect=("--diffperf-static-noise", "sometimes")),
    P("c26-opt-remeasure-superscript", "--diffperf-remeasure=²", expect=("--diffperf-remeasure", "²")),
    P("c26-opt-regen-min-improvement-neg", "--regen-baselines", "--regen-min-improvement=-5%", expect=("--regen-min-improvement", "-5%")),
    P("c26-out-json-is-baseline", f"--diffperf-json={B}", expect=("--diffperf-json", B, "which this run reads")),
    P("c26-out-json-is-cases", f"--diffperf-json={C}", expect=("--diffperf-json", C, "which this run reads"), subprocess=True),
    P("c26-out-html-is-cases", f"--diffperf-html={C}", expect=("--diffperf-html", C, "which this run reads")),
    P("c26-out-html-is-baseline", f"--diffperf-html={B}", expect=("--diffperf-html", B, "which this run reads")),
    P("c26-out-json-is-thresholds", *THRESHOLDS, f"--diffperf-json={T}", expect=("--diffperf-json", T, "which this run reads")),
    P("c26-out-json-in-gt", *CONSISTENCY, "--diffperf-json=gt/results.json", expect=("--diffperf-json", "inside", "gt")),
    P("c26-out-json-is-manifest", *CONSISTENCY, f"--diffperf-json={M}", expect=("--diffperf-json", "which this run reads")),
    P("c26-out-artifacts-is-gt", *CONSISTENCY, "--diffperf-artifacts=gt", expect=("--diffperf-artifacts", "which this run reads")),
    P("c26-out-artifacts-in-gt", *CONSISTENCY, "--diffperf-artifacts=gt/art", expect=("--diffperf-artifacts", "inside")),
    P("c26-out-artifacts-is-file", *CONSISTENCY, f"--diffperf-artifacts={C}", expect=("--diffperf-artifacts", "is a file")),
    P("c26-out-artifacts-unwritable", *CONSISTENCY, "--diffperf-artifacts=/proc/nope", expect=("--diffperf-artifacts", "/proc/nope")),
    P("c26-out-log-dir-is-file", f"--diffperf-log-dir={C}", expect=("--diffperf-log-dir", "is a file")),
    P("c26-out-log-dir-unwritable", "--diffperf-log-dir=/proc/nope", expect=("--diffperf-log-dir", "/proc/nope")),
    P("c26-out-history-is-baseline", f"--diffperf-history={B}", expect=("--diffperf-history", "is a file")),
    P("c26-out-history-unwritable", "--diffperf-history=/proc/nope", expect=("--diffperf-history", "/proc/nope")),
    P("c26-out-html-unwritable", "--diffperf-html=/proc/nope/r.html", expect=("--diffperf-html", "/proc/nope")),
    P("c26-out-json-under-file", f"--diffperf-json={C}/r.json", expect=("--diffperf-json", "not a folder")),
    P("c26-out-json-under-dev-null", "--diffperf-json=/dev/null/r.json", expect=("--diffperf-json", "/dev/null is not a folder")),
    P("c26-out-json-unwritable-folder", "--diffperf-json=ro/r.json", expect=("--diffperf-json", "not writable"), raw={"ro/.keep": ""}, modes={"ro": 0o555}),
    P("c26-out-step-summary-is-cases", expect=("GITHUB_STEP_SUMMARY", "which this run reads"), env={"GITHUB_STEP_SUMMARY": C}),
    P("c26-out-step-summary-unwritable", expect=("GITHUB_STEP_SUMMARY", "/proc/nope"), env={"GITHUB_STEP_SUMMARY": "/proc/nope/s.md"}),
    P("c26-out-step-summary-folder", expect=("GITHUB_STEP_SUMMARY", "is a folder"), env={"GITHUB_STEP_SUMMARY": "empty"}),
    P("c26-out-regen-gt-dir-is-file", "--regen-ground-truth", f"--diffperf-gt-dir={C}", "--diffperf-clip-model=diffperf-tiny", "--diffperf-clip-pretrained=none", expect=("--diffperf-gt-dir",)),
    # -- ini values --------------------------------------------------------------------------------------------------
    P("c26-ini-regen-typo", expect=("regen_baselines", "'ture'"), raw=ini("regen_baselines = ture")),
    P("c26-ini-regen-dry-run-maybe", expect=("regen_dry_run", "'maybe'"), raw=ini("regen_dry_run = maybe")),
    P("c26-ini-dry-run-2", expect=("diffperf_dry_run", "'2'"), raw=ini("diffperf_dry_run = 2")),
    P("c26-ini-regen-force-words", expect=("regen_force", "yes please"), raw=ini("regen_force = yes please")),
    P("c26-ini-regen-gt-typo", expect=("regen_ground_truth", "'flase'"), raw=ini("regen_ground_truth = flase")),
    P("c26-ini-request-timeout-inf", expect=("ini key diffperf_request_timeout ", "'inf'"), raw=ini("diffperf_request_timeout = inf")),
    P("c26-ini-startup-timeout-text", expect=("ini key diffperf_startup_timeout ", "'abc'"), raw=ini("diffperf_startup_timeout = abc")),
    P("c26-ini-shard", expect=("ini key diffperf_shard ", "'x'"), raw=ini("diffperf_shard = x")),
    P("c26-ini-inconclusive", expect=("ini key diffperf_inconclusive ", "maybe"), raw=ini("diffperf_inconclusive = maybe")),
    P("c26-ini-static-noise", expect=("ini key diffperf_static_noise ", "of"), raw=ini("diffperf_static_noise = of")),
    P("c26-ini-remeasure", expect=("ini key diffperf_remeasure ", "-1"), raw=ini("diffperf_remeasure = -1")),
    P("c26-ini-log-tail", expect=("ini key diffperf_log_tail ", "-1"), raw=ini("diffperf_log_tail = -1")),
    P("c26-ini-progress-every", expect=("ini key diffperf_progress_every ", "'0'"), raw=ini("diffperf_progress_every = 0")),
    P("c26-ini-preset", expect=("nope",), raw=ini("diffperf_preset = nope")),
    P("c26-ini-devices", expect=("ini key diffperf_devices ", "',,'"), raw=ini("diffperf_devices = ,,")),
    # -- ground truth ------------------------------------------------------------------------------------------------
    P("c26-gt-manifest-folder", *CONSISTENCY, expect=(M, "not a file"), dirs=(M,)),
    P("c26-gt-manifest-broken-link", *CONSISTENCY, expect=(M, "not a file"), links={M: "nowhere.json"}),
    P("c26-gt-manifest-top-list", *CONSISTENCY, expect=(M, "expected a JSON object"), raw={M: "[]"}),
    P("c26-gt-manifest-bytes-negative", *CONSISTENCY, expect=(M, "files.tiny_1gpu.png.bytes"), change=set_in(M, "files", "tiny_1gpu.png", "bytes", value=-1)),
    P("c26-gt-manifest-entry-string", *CONSISTENCY, expect=(M, "files.tiny_1gpu.png"), change=set_in(M, "files", "tiny_1gpu.png", value="abc")),
    P("c26-gt-manifest-format-string", *CONSISTENCY, expect=(M, "format"), change=set_in(M, "format", value="1")),
    P("c26-gt-manifest-unknown-key", *CONSISTENCY, expect=(M, "extra"), change=set_in(M, "extra", value=1)),
    P("c26-gt-manifest-nan", *CONSISTENCY, expect=(M,), raw={M: MANIFEST_JSON.replace('"bytes": ', '"bytes": NaN, "x": ')}),
    P("c26-gt-bomb-png", *CONSISTENCY, expect=("tiny_1gpu.png", "not a readable image"), raw={"gt/tiny_1gpu.png": BOMB}, change=manifest_for(BOMB)),
    P("c26-gt-empty-png", *CONSISTENCY, expect=("tiny_1gpu.png", "not a readable image"), raw={"gt/tiny_1gpu.png": b""}, change=manifest_for(b"")),
    P("c26-gt-truncated-png", *CONSISTENCY, expect=("tiny_1gpu.png", "not a readable image"), raw={"gt/tiny_1gpu.png": PNG[:40]}, change=manifest_for(PNG[:40])),
    P("c26-gt-tampered-png", *CONSISTENCY, expect=("tiny_1gpu.png", "sha256"), raw={"gt/tiny_1gpu.png": PNG[:-1] + b"\0"}),
    P("c26-gt-link-to-etc", *CONSISTENCY, expect=("tiny_1gpu.png", "outside the ground-truth folder"), links={"gt/tiny_1gpu.png": "/etc/hostname"}),
    P("c26-gt-dir-is-file", f"--diffperf-gt-dir={C}", "--diffperf-clip-model=diffperf-tiny", "--diffperf-clip-pretrained=none", expect=("--diffperf-gt-dir",)),
    P("c26-gt-clip-weights-missing", "--diffperf-gt-dir=gt", "--diffperf-clip-model=diffperf-tiny", "--diffperf-clip-pretrained=nope.bin", expect=("nope.bin",)),
    # -- thresholds, noise, compare-to --------------------------------------------------------------------------------
    P("c26-thresholds-top-list", *THRESHOLDS, expect=(T, "expected a JSON object"), raw={T: "[]"}),
    P("c26-thresholds-case-list", *THRESHOLDS, expect=(T, "cases.tiny"), change=set_in(T, "cases", "tiny", value=[20.0])),
    P("c26-thresholds-1e400", *THRESHOLDS, expect=(T, "cases.tiny.psnr_threshold"), raw={T: '{"cases": {"tiny": {"psnr_threshold": 1e400}}}'}),
    P("c26-thresholds-bool", *THRESHOLDS, expect=(T, "cases.tiny.psnr_threshold"), change=set_in(T, "cases", "tiny", "psnr_threshold", value=True)),
    P("c26-thresholds-default-string", *THRESHOLDS, expect=(T, "default_ssim_threshold_image"), change=set_in(T, "default_ssim_threshold_image", value="0.9")),
    P("c26-thresholds-unreadable", *THRESHOLDS, expect=(T, "cannot read"), modes={T: 0}),
    P("c26-noise-truncated", "--diffperf-noise=noise.json", expect=("noise.json", "invalid JSON"), raw={"noise.json": '{"cpu": '}),
    P("c26-noise-top-list", "--diffperf-noise=noise.json", expect=("noise.json",), raw={"noise.json": "[]"}),
    P("c26-noise-missing", "--diffperf-noise=noise.json", expect=("noise.json",)),
    P("c26-noise-folder", "--diffperf-noise=empty", expect=("empty",)),
    P("c26-compare-to-truncated", f"--diffperf-compare-to={R}", expect=(R, "invalid JSON"), raw={R: RESULTS_JSON[:30]}),
    P("c26-compare-to-version", f"--diffperf-compare-to={R}", expect=(R, "version"), change=set_in(R, "version", value=1)),
    P("c26-compare-to-rows", f"--diffperf-compare-to={R}", expect=(R, "rows"), change=set_in(R, "rows", value=3)),
    P("c26-compare-to-folder", "--diffperf-compare-to=empty", expect=("empty",)),
    # -- diffperf lint / show / plan ------------------------------------------------------------------------------------
    D("c26-lint-truncated", "lint", B, expect=(B, "invalid JSON"), raw={B: BASE_JSON[:50]}),
    D("c26-lint-top-list", "lint", B, expect=(B, "expected a JSON object"), raw={B: "[]"}),
    D("c26-lint-nan", "lint", B, expect=(B, "expected_e2e_ms"), raw={B: BASE_JSON.replace("600000.0", "NaN", 1)}),
    D("c26-lint-key-non-ascii", "lint", B, expect=(B, "tïny"), change=rename_scenario("tïny")),
    D("c26-lint-broken-link", "lint", B, expect=(B, "not found"), links={B: "nowhere.json"}),
    D("c26-lint-bad-hardware", "lint", B, "--hardware", "quantum9", expect=("quantum9",)),
    D("c26-lint-unreadable", "lint", B, expect=(B, "cannot read"), modes={B: 0}),
    D("c26-show-truncated", "show", B, expect=(B, "invalid JSON"), raw={B: BASE_JSON[:50]}),
    D("c26-show-num-frames-text", "show", B, "--num-frames", "abc", expect=("--num-frames", "abc")),
    D("c26-show-missing", "show", "nope.json", expect=("nope.json", "not found")),
    D("c26-show-bad-preset", "show", B, "--preset", "nope", expect=("nope",)),
    D("c26-plan-shards-negative", "plan", B, "--shards", "-1", expect=("--shards", "-1")),
    D("c26-plan-shards-superscript", "plan", B, "--shards", "²", expect=("--shards", "²")),
    D("c26-plan-truncated", "plan", B, expect=(B, "invalid JSON"), raw={B: BASE_JSON[:50]}),
    D("c26-plan-cases-truncated", "plan", B, "--cases", C, expect=(C, "invalid JSON"), raw={C: CASES_JSON[:30]}),
    D("c26-plan-cases-missing", "plan", B, "--cases", "nope.json", expect=("nope.json",)),
    D("c26-plan-target-time-nan", "plan", B, "--target-time", "nan", expect=("--target-time", "nan")),
    # -- diffperf merge ---------------------------------------------------------------------------------------------------
    D("c26-merge-rows-int", "merge", R, expect=(R, "rows", "expected a list"), change=set_in(R, "rows", value=3)),
    D("c26-merge-row-int", "merge", R, expect=(R, "rows.0", "expected an object"), change=set_in(R, "rows", value=[1])),
    D("c26-merge-row-scenario-int", "merge", R, expect=(R, "rows.0.scenario"), change=set_in(R, "rows", value=[{"scenario": 1}])),
    D("c26-merge-row-no-scenario", "merge", R, expect=(R, "rows.0.scenario"), change=set_in(R, "rows", value=[{"e2e_ms": 1.0}])),
    D("c26-merge-provenance-string", "merge", R, expect=(R, "provenance"), change=set_in(R, "provenance", value="x")),
    D("c26-merge-provenance-timestamp-int", "merge", R, expect=(R, "provenance.timestamp"), change=set_in(R, "provenance", value={"timestamp": 5})),
    D("c26-merge-provenance-list", "merge", R, expect=(R, "provenance"), change=set_in(R, "provenance", value=[])),
    D("c26-merge-servers-string", "merge", R, expect=(R, "servers"), change=set_in(R, "servers", value="a")),
    D("c26-merge-server-int", "merge", R, expect=(R, "servers.0"), change=set_in(R, "servers", value=[1])),
    D("c26-merge-scenario-null", "merge", R, expect=(R, "scenarios.0"), change=set_in(R, "scenarios", value=[None])),
    D("c26-merge-checks-string", "merge", R, expect=(R, "scenarios.0.checks"), change=result_field(checks="x")),
    D("c26-merge-scenario-name-int", "merge", R, expect=(R, "scenarios.0.scenario"), change=result_field(scenario=5)),
    D("c26-merge-outcome-wrong", "merge", R, expect=(R, "scenarios.0.outcome"), change=result_field(outcome="pass", verdict="fail")),
    D("c26-merge-inconclusive-mode", "merge", R, expect=(R, "inconclusive"), change=set_in(R, "inconclusive", value="maybe")),
    D("c26-merge-empty-file", "merge", R, expect=(R, "invalid JSON"), raw={R: ""}),
    D("c26-merge-top-list", "merge", R, expect=(R, "expected a JSON object"), raw={R: "[]"}),
    D("c26-merge-folder", "merge", "empty", expect=("empty",)),
    D("c26-merge-output-is-input", "merge", R, "-o", R, expect=("-o", "which this run reads")),
    D("c26-merge-markdown-is-input", "merge", R, "--markdown", R, expect=("--markdown", "which this run reads")),
    D("c26-merge-html-is-input", "merge", R, "--html", R, expect=("--html", "which this run reads")),
    D("c26-merge-output-is-expect-all", "merge", R, "--expect-all", B, "-o", B, expect=("-o", "which this run reads")),
    D("c26-merge-step-summary-is-input", "merge", R, expect=("GITHUB_STEP_SUMMARY", "which this run reads"), env={"GITHUB_STEP_SUMMARY": R}),
    D("c26-merge-step-summary-unwritable", "merge", R, expect=("GITHUB_STEP_SUMMARY", "/proc/nope"), env={"GITHUB_STEP_SUMMARY": "/proc/nope/s.md"}),
    D("c26-merge-html-unwritable", "merge", R, "--html", "/proc/nope/r.html", expect=("--html", "/proc/nope")),
    D("c26-merge-expect-all-truncated", "merge", R, "--expect-all", B, expect=(B, "invalid JSON"), raw={B: BASE_JSON[:40]}),
    D("c26-merge-unreadable", "merge", R, expect=(R, "cannot read"), modes={R: 0}),
    D("c26-merge-history-bad-file", "merge", R, "--html", "r.html", "--history", "history", expect=("history/r.json", "rows"), change=history_file(set_in(R, "rows", value=3))),
    # -- diffperf trend ---------------------------------------------------------------------------------------------------
    D("c26-trend-truncated", "trend", "history", expect=("history/r.json", "invalid JSON"), raw={"history/r.json": RESULTS_JSON[:50]}),
    D("c26-trend-rows-int", "trend", "history", expect=("history/r.json", "rows"), change=history_file(set_in(R, "rows", value=3))),
    D("c26-trend-provenance-string", "trend", "history", expect=("history/r.json", "provenance"), change=history_file(set_in(R, "provenance", value="x"))),
    D("c26-trend-verdict-upper", "trend", "history", expect=("history/r.json", "scenarios.0.verdict"), change=history_file(result_field(verdict="FAIL"))),
    D("c26-trend-dir-is-file", "trend", R, expect=(R,)),
    D("c26-trend-missing", "trend", "nope", expect=("nope",)),
    D("c26-trend-metric", "trend", "history", "--metric", "nope", expect=("--metric", "nope"), change=history_file()),
    # -- diffperf compare -------------------------------------------------------------------------------------------------
    D("c26-compare-truncated", "compare", "--config", C, "--dry-run", expect=(C, "invalid JSON"), raw={C: CASES_JSON[:30]}),
    D("c26-compare-folder", "compare", "--config", "empty", "--dry-run", expect=("empty",)),
    D("c26-compare-env-name", "compare", "--config", C, "--dry-run", expect=(C, "extra_env", "'A=B'"), change=env(**{"A=B": "1"})),
    D("c26-compare-timeout-1e300", "compare", "--config", C, "--dry-run", expect=(C, "cases.0.timeout_s"), change=case(timeout_s=1e300)),
    D("c26-compare-request-timeout-1e300", "compare", "--config", C, "--request-timeout", "1e300", "--dry-run", expect=("--request-timeout", "1e300")),
    D("c26-compare-startup-timeout-1e300", "compare", "--config", C, "--startup-timeout", "1e300", "--dry-run", expect=("--startup-timeout", "1e300")),
    D("c26-compare-output-is-config", "compare", "--config", C, "--output", C, expect=("--output", "which this run reads")),
    D("c26-compare-log-dir-unwritable", "compare", "--config", C, "--log-dir", "/proc/nope", expect=("--log-dir", "/proc/nope")),
    D("c26-compare-journal-truncated", "compare", "--config", C, "--journal", "h.jsonl", "--dry-run", expect=("h.jsonl",), raw={"h.jsonl": '{"a": '}),
    D("c26-compare-id-300", "compare", "--config", C, "--dry-run", expect=(C, "cases.0.id", "300 characters"), change=rename_case("t" * 300)),
    # -- diffperf import-cases --------------------------------------------------------------------------------------------
    D("c26-import-output-is-input", "import-cases", SG, "-o", SG, expect=("--output", "would replace"), copies={"sg": SGLANG_SRC}),
    D("c26-import-output-beside-input", "import-cases", SG, "-o", f"{SG_DIR}/cases.json", expect=("--output", "inside"), copies={"sg": SGLANG_SRC}),
    D("c26-import-systemexit", "import-cases", SG, "-o", "out.json", expect=(SG, "sys.exit(0)"), copies={"sg": SGLANG_SRC}, appends={SG: "\nraise SystemExit(0)\n"}, subprocess=True),
    D("c26-import-systemexit-code", "import-cases", SG, expect=(SG, "sys.exit(3)"), copies={"sg": SGLANG_SRC}, appends={SG: "\nimport sys\nsys.exit(3)\n"}),
    D("c26-import-task-types-truncated", "import-cases", SG, "--task-types", "tt.json", expect=("tt.json",), copies={"sg": SGLANG_SRC}, raw={"tt.json": '{"a": '}),
    D("c26-import-baselines-truncated", "import-cases", SG, "--baselines", B, expect=(B, "invalid JSON"), copies={"sg": SGLANG_SRC}, raw={B: BASE_JSON[:40]}),
    D("c26-import-bad-hardware", "import-cases", SG, "--hardware", "quantum9", expect=("quantum9",), copies={"sg": SGLANG_SRC}),
    D("c26-import-output-folder", "import-cases", SG, "-o", "empty", expect=("--output", "is a folder"), copies={"sg": SGLANG_SRC}),
    D("c26-import-not-gpu-cases", "import-cases", C, expect=(C, "gpu_cases.py")),
]  # fmt: skip


def materialize(root: Path, bad: Bad) -> None:
    files = base_files()
    if bad.change is not None:
        tree = copy.deepcopy(files)
        bad.change(tree)
        files = tree
    files.update(bad.raw)
    for name, source in bad.copies.items():
        shutil.copytree(source, root / name)
    for name, text in bad.appends.items():
        with open(root / name, "a", encoding="utf-8") as out:
            out.write(text)
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name in bad.dirs:
            path.mkdir()
        elif name in bad.links:
            path.symlink_to(bad.links[name])
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_text(json.dumps(content, indent=2), encoding="utf-8")
    for name, mode in bad.modes.items():
        (root / name).chmod(mode)


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
        # The plugin alone, registered as the module: autoload reads the entry points (and pytest the file lists)
        # of every installed distribution, a quarter of each of these ~400 runs, and so does ``-p MODULE`` (which
        # looks for an entry point of that name first). The real-process cases load it by its entry point.
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
            result = pytester.runpytest(*bad.args, plugins=[plugin])
        return int(result.ret), result.stdout.str() + "\n" + result.stderr.str()
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    done = diffperf(*bad.args, cwd=root, env={**env, **bad.env})
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
    assert len(CASES) >= 250
    assert len({bad.id for bad in CASES}) == len(CASES)
    commands = {bad.args[0] for bad in CASES if bad.entry == "diffperf"}
    assert commands == {"lint", "show", "plan", "merge", "compare", "import-cases", "trend"}


def case_folder(
    bad: Bad, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, pytest.Pytester | None]:
    """Where a case runs: pytester's folder for the plugin; for ``diffperf`` (which the runner starts in its folder),
    a ``tmp_path`` that is also its home, as pytester's is: pytester's ``sys.modules`` snapshots, taken before and
    after each test, cost about as much as the in-process command."""
    if bad.entry == "pytest":
        pytester: pytest.Pytester = request.getfixturevalue("pytester")
        return pytester.path, pytester
    folder: Path = request.getfixturevalue("tmp_path")
    monkeypatch.setenv("HOME", str(folder))
    return folder, None


@pytest.mark.parametrize("bad", CASES, ids=lambda bad: bad.id)
def test_malformed_input_is_one_clear_error(bad: Bad, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    if bad.modes and os.geteuid() == 0:
        pytest.skip("root reads and writes whatever the permission bits say (test_read_only_paths.py drops that)")
    root, pytester = case_folder(bad, request, monkeypatch)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    for name, value in bad.env.items():
        monkeypatch.setenv(name, value.replace("{root}", str(root)))
    check(bad, in_process(bad, root, pytester))


@pytest.mark.server
@pytest.mark.parametrize("bad", REAL_PROCESS_CASES, ids=lambda bad: bad.id)
def test_malformed_input_in_a_real_process(bad: Bad, real_runs: dict[str, Ran]):
    check(bad, real_runs[bad.id])
