"""Command-line options and ini keys, defined once, read into a frozen ``Settings``.

Every option is also an ini key in ``[tool.pytest.ini_options]`` (``--diffperf-cases`` ->
``diffperf_cases``); the command line wins. Paths from the ini file are relative to the rootdir,
paths from the command line to the invocation directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from .._util.text import is_switch, truthy
from ..cases import MAX_WAIT_S
from ..errors import DiffperfError

LAST = "last"  # --diffperf-compare-to's word for the history's latest run


@dataclass(frozen=True)
class Option:
    flag: str
    help: str
    default: str | None = None
    is_path: bool = False
    is_flag: bool = False  # takes no value on the command line; ini: true/false
    words: tuple[str, ...] = ()  # values of a path option kept as they are, never made a path

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


OPTIONS = (
    Option("--diffperf", "run the baseline scenarios, judged with tolerance PROFILE (pr_test, long_term, ...)"),
    Option("--diffperf-baselines", "perf baseline file, or an SGLang perf_baselines/ directory", is_path=True),
    Option("--diffperf-hardware", "platform (h100, b200, 5090, xpu_b60, npu, musa, cpu; aliases accepted)"),
    Option(
        "--diffperf-cases",
        "case definitions: a JSON case file, SGLang's gpu_cases.py (or a checkout or wheel holding it), "
        "or sglang (the installed package)",
        is_path=True,
        words=("sglang",),
    ),
    Option(
        "--diffperf-server",
        "server launcher: sglang, reference (the bundled CPU server), or a registered one",
        default="sglang",
    ),
    Option("--diffperf-preset", "limit-formula preset", default="sglang"),
    Option("--diffperf-json", "write one result row per measured request to this JSON file", is_path=True),
    Option("--diffperf-startup-timeout", "seconds to wait for a server to become ready", default="1200"),
    Option("--diffperf-request-timeout", "seconds per request when a case sets no timeout_s", default="600"),
    Option("--diffperf-shard", "run only shard K of N (1-based, e.g. 2/4); shards are balanced server groups"),
    Option("--diffperf-shard-id", "shard K (1-based), with --diffperf-num-shards N"),
    Option("--diffperf-num-shards", "number of shards N, with --diffperf-shard-id K"),
    Option("--diffperf-devices", "devices to split among xdist workers, e.g. 0,1,2,3 (default: *_VISIBLE_DEVICES)"),
    Option("--regen-baselines", "measure the selected scenarios and write them into the baseline file", is_flag=True),
    Option("--regen-policy", "regeneration policy: replace, improve or tighten (see docs/regen.md)", default="replace"),
    Option("--regen-min-improvement", "e2e gain the improve policy needs (0.05 or 5%%)", default="5%"),
    Option("--regen-dry-run", "regenerate, print the summary and a diff, write nothing", is_flag=True),
    Option("--diffperf-gt-dir", "ground-truth folder (SGLang names); else SGLANG_CONSISTENCY_GT_DIR", is_path=True),
    Option("--diffperf-thresholds", "consistency thresholds: a file or consistency_thresholds/ folder", is_path=True),
    Option("--diffperf-clip-model", "open_clip architecture for the CLIP similarity", default="ViT-L-14"),
    Option("--diffperf-clip-pretrained", "CLIP weights: open_clip tag, local file, or none", default="openai"),
    Option("--diffperf-frames", "video frames to compare: first,mid,last | all | every:K", default="first,mid,last"),
    Option("--diffperf-artifacts", "write comparison images and metrics per case here", is_path=True),
    Option("--regen-ground-truth", "write the outputs as ground truth instead of comparing them", is_flag=True),
    Option(
        "--diffperf-suites",
        "SGLang CI suites to read from SGLang's case lists, comma-separated (default: those its CI runs on the platform)",
    ),
    Option(
        "--diffperf-sglang-semantics",
        "judge SGLang's case lists by the rules of this SGLang release (e.g. 0.5.12) instead of the one detected",
    ),
    Option(
        "--diffperf-dry-run",
        "print each selected scenario's server command, environment and request; start nothing",
        is_flag=True,
    ),
    Option(
        "--diffperf-base",
        "A/B: judge each scenario against this base build, run side by side on fresh servers; SPEC: current, "
        "or 'python=PATH; program=CMD; pythonpath=DIR; env=NAME=VALUE; args=SERVE ARGS' (docs/verdicts.md)",
    ),
    Option("--diffperf-candidate", "A/B: how the candidate is served (SPEC, as --diffperf-base)", default="current"),
    Option("--diffperf-ab-request-pairs", "A/B: request pairs per process pair", default="4"),
    Option("--diffperf-ab-max-process-pairs", "A/B: fresh process pairs per scenario at most", default="10"),
    Option("--diffperf-ab-max-requests", "A/B: measured requests per scenario at most, both sides", default="80"),
    Option(
        "--diffperf-ab-min-process-pairs",
        "A/B: process pairs before any verdict (1 only where calibrated priors show no per-process offsets)",
        default="2",
    ),
    Option(
        "--diffperf-ab-tolerance",
        "A/B: the e2e, denoising-stage and step change never called unchanged (default: the profile's)",
    ),
    Option(
        "--diffperf-ab-servers",
        "A/B: together (base and candidate side by side) or one-at-a-time (a device cannot hold both)",
        default="together",
    ),
    Option(
        "--diffperf-ab-pairs",
        "A/B: group (a server group's scenarios share each process pair) or scenario (fresh pairs per scenario)",
        default="group",
    ),
    Option(
        "--diffperf-ab-prestart",
        "A/B: process pairs started ahead of the one measuring (auto: 1 on CPU servers or where the devices "
        "hold two pairs apart, else 0)",
        default="auto",
    ),
    Option(
        "--diffperf-inconclusive",
        "an inconclusive verdict: report (the test shows INCONCLUSIVE, the run does not fail) or fail",
        default="report",
    ),
    Option(
        "--diffperf-static-noise",
        "judge stored-baseline timing checks with the run's noise: auto (on cpu, for cases of 2+ requests), on, off",
        default="auto",
    ),
    Option("--diffperf-remeasure", "fresh servers a static scenario may be measured on (1: never again)", default="3"),
    Option("--diffperf-noise", "noise priors calibrated for this runner class (JSON; docs/verdicts.md)", is_path=True),
    Option(
        "--diffperf-busy-share",
        "a static fail measured while other processes took more than this share of the CPUs (or of a device's "
        "memory) is re-measured on a quiet machine, else inconclusive (machine busy); off: never",
        default="25%",
    ),
    Option(
        "--diffperf-quiet-wait",
        "seconds to wait for a quiet machine (a busy fail) or a free device (--diffperf-busy-device wait)",
        default="120",
    ),
    Option(
        "--diffperf-busy-device",
        "a server's device held by another process: report (say which and start), wait (then fail), fail",
        default="report",
    ),
    Option(
        "--diffperf-log-dir",
        "server logs go in a new folder here (default: pytest's basetemp, which keeps the last 3 runs)",
        is_path=True,
    ),
    Option("--diffperf-progress-every", "seconds between progress lines while a server loads or a request runs", "15"),
    Option("--diffperf-log-tail", "server log lines in a failure message (default: 200, with --tb=short 20)"),
    Option("--diffperf-html", "write a self-contained HTML report here (needs the report extra)", is_path=True),
    Option("--diffperf-history", "append this run's results, with provenance, to this history folder", is_path=True),
    Option(
        "--diffperf-compare-to",
        "compare this run with an earlier --diffperf-json file, or 'last' (the latest run of --diffperf-history)",
        is_path=True,
        words=(LAST,),
    ),
    Option(
        "--regen-force", "regenerate even where the baseline file's platform is not the measured hardware", is_flag=True
    ),
    Option("--regen-description", "replace the baseline file's metadata.description with this text"),
)


@dataclass(frozen=True)
class Settings:
    """The plugin's configuration for one pytest run: a field per option, named by its dest (``--diffperf``'s:
    ``profile``)."""

    profile: str | None
    diffperf_baselines: Path | None
    diffperf_hardware: str | None
    diffperf_cases: Path | None
    diffperf_server: str
    diffperf_preset: str
    diffperf_json: Path | None
    diffperf_startup_timeout: float
    diffperf_request_timeout: float
    diffperf_shard: str | None
    diffperf_shard_id: str | None
    diffperf_num_shards: str | None
    diffperf_devices: str | None
    regen_baselines: bool
    regen_policy: str  # checked by regen.RegenSettings
    regen_min_improvement: str
    regen_dry_run: bool
    diffperf_gt_dir: Path | None
    diffperf_thresholds: Path | None
    diffperf_clip_model: str
    diffperf_clip_pretrained: str
    diffperf_frames: str
    diffperf_artifacts: Path | None
    regen_ground_truth: bool
    diffperf_suites: str | None
    diffperf_sglang_semantics: str | None
    diffperf_dry_run: bool
    diffperf_base: str | None
    diffperf_candidate: str
    diffperf_ab_request_pairs: str
    diffperf_ab_max_process_pairs: str
    diffperf_ab_max_requests: str
    diffperf_ab_min_process_pairs: str
    diffperf_ab_tolerance: str | None
    diffperf_ab_servers: str
    diffperf_ab_pairs: str
    diffperf_ab_prestart: str
    diffperf_inconclusive: str
    diffperf_static_noise: str
    diffperf_remeasure: str
    diffperf_noise: Path | None
    diffperf_log_dir: Path | None = None
    diffperf_progress_every: float = 15.0
    diffperf_log_tail: int | None = None  # None: by --tb
    diffperf_html: Path | None = None
    diffperf_history: Path | None = None
    diffperf_compare_to: Path | None = None
    regen_force: bool = False
    regen_description: str | None = None
    diffperf_busy_share: str = "25%"
    diffperf_quiet_wait: float = 120.0
    diffperf_busy_device: str = "report"


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("diffperf", "diffusion serving performance regressions")
    for opt in OPTIONS:
        if opt.is_flag:
            group.addoption(opt.flag, dest=opt.dest, action="store_true", default=None, help=opt.help)
        else:
            metavar = "PROFILE" if opt.flag == "--diffperf" else opt.dest.rsplit("_", 1)[-1].upper()
            group.addoption(opt.flag, dest=opt.dest, default=None, metavar=metavar, help=opt.help)
        parser.addini(opt.dest, opt.help.replace("%%", "%"), default=None)


def option_value(config: pytest.Config, dest: str, *, early: bool = False) -> object:
    """The raw value of an option: command line, else ini key, else default (None if unset). ``early``: read
    before pytest has parsed the command line whole (in ``pytest_load_initial_conftests``)."""
    return _raw(config, next(opt for opt in OPTIONS if opt.dest == dest), early=early)[0]


def option_path(config: pytest.Config, dest: str, *, early: bool = False) -> Path | None:
    """A path option's value as ``read_settings`` resolves it (None if unset)."""
    opt = next(opt for opt in OPTIONS if opt.dest == dest)
    raw, base = _raw(config, opt, early=early)
    return None if raw is None else (base / str(raw)).resolve()


def _raw(config: pytest.Config, opt: Option, *, early: bool = False) -> tuple[object, Path]:
    cmdline = getattr(config.known_args_namespace, opt.dest, None) if early else config.getoption(opt.dest)
    raw, base = cmdline, config.invocation_params.dir
    if raw == "" and opt.flag != "--diffperf":  # --diffperf= has its own message (plugin.py)
        raise pytest.UsageError(f"diffperf: {opt.flag}: expected a value, got nothing (leave the option out instead)")
    if raw is None:
        raw, base = config.getini(opt.dest), config.rootpath
        if opt.is_flag and not is_switch(raw):  # a typo must not switch the setting off without a word
            raise pytest.UsageError(
                f"diffperf: ini key {opt.dest} ({config.inipath}): expected true or false "
                f"(1/0, yes/no, on/off), got {raw!r}"
            )
    return (raw if raw not in (None, "") else opt.default), Path(base)


def read_settings(config: pytest.Config) -> Settings:
    values: dict[str, object] = {}
    for opt in OPTIONS:
        raw, base = _raw(config, opt)
        if raw is not None and opt.is_path:
            raw = Path(str(raw)) if str(raw) in opt.words else (base / str(raw)).resolve()
        values[opt.dest] = truthy(raw) if opt.is_flag else raw
    for name in ("diffperf_startup_timeout", "diffperf_request_timeout", "diffperf_progress_every"):
        values[name] = _seconds(values[name], "--" + name.replace("_", "-"))
    values["diffperf_quiet_wait"] = _seconds(values["diffperf_quiet_wait"], "--diffperf-quiet-wait", zero_ok=True)
    values["diffperf_log_tail"] = _count(values["diffperf_log_tail"], "--diffperf-log-tail")
    values["profile"] = values.pop("diffperf")
    return Settings(**values)  # type: ignore[arg-type]


def _count(raw: object, flag: str) -> int | None:
    if raw is None:
        return None
    try:
        value = int(str(raw))
    except ValueError:
        value = -1
    if value < 0:
        raise DiffperfError(f"expected a number of lines (0 or more), got {raw!r}", source=flag)
    return value


def _seconds(raw: object, flag: str, *, zero_ok: bool = False) -> float:
    """A duration in seconds: positive (or 0 where ``zero_ok``: do not wait), at most a week."""
    try:
        value = float(str(raw))
    except ValueError:
        raise DiffperfError(f"expected a number of seconds, got {raw!r}", source=flag) from None
    if not (value >= 0 if zero_ok else value > 0) or value > MAX_WAIT_S:
        least = "0 or more" if zero_ok else "a positive number of"
        raise DiffperfError(f"expected {least} seconds, at most {MAX_WAIT_S:.0f} (a week), got {raw!r}", source=flag)
    return value


REGEN_ENV_ALIAS = "SGLANG_GEN_BASELINE"
GT_ENV_ALIAS = "SGLANG_GEN_GT"  # read again by consistency.config_from_env, which also takes SGLANG_GT_OUTPUT_DIR


def requested(config: pytest.Config, env: Mapping[str, str] = os.environ, *, early: bool = False) -> bool:
    """``--regen-baselines`` or ``--regen-dry-run`` (or their ini keys); or ``SGLANG_GEN_BASELINE=1``
    where a baseline file is configured (elsewhere the variable is left to SGLang's own harness)."""
    if any(truthy(option_value(config, dest, early=early)) for dest in ("regen_baselines", "regen_dry_run")):
        return True
    return truthy(env.get(REGEN_ENV_ALIAS, "")) and option_value(config, "diffperf_baselines", early=early) is not None


def ground_truth_requested(config: pytest.Config, env: Mapping[str, str] = os.environ, *, early: bool = False) -> bool:
    """``--regen-ground-truth`` (or its ini key); or ``SGLANG_GEN_GT=1`` where a baseline file is configured."""
    if truthy(option_value(config, "regen_ground_truth", early=early)):
        return True
    return truthy(env.get(GT_ENV_ALIAS, "")) and option_value(config, "diffperf_baselines", early=early) is not None


def active(config: pytest.Config, *, early: bool = False) -> bool:
    """Whether the plugin runs in this session: a profile (``--diffperf``), or a regeneration asked for."""
    profile = option_value(config, "diffperf", early=early)
    return bool(profile) or requested(config, early=early) or ground_truth_requested(config, early=early)


def detached_paths(config: pytest.Config) -> list[tuple[str, str]]:
    """Path options written as two words whose value exists (``--diffperf-cases /tmp/x.json``): (flag, value).

    pytest picks the rootdir, and with it the ini file, from the existing paths among the arguments
    before it knows the plugin's options, so such a value counts as a test path there (the ``=``
    form does not)."""
    args = [str(a) for a in config.invocation_params.args]
    flags = {opt.flag for opt in OPTIONS if opt.is_path}
    return [
        (arg, args[i + 1])
        for i, arg in enumerate(args[:-1])
        if arg in flags and (config.invocation_params.dir / args[i + 1]).exists()
    ]


def detached_paths_note(config: pytest.Config) -> str:
    """What to do about ``detached_paths`` ('' when there are none)."""
    found = detached_paths(config)
    if not found:
        return ""
    written = ", ".join(f"{flag}={value}" for flag, value in found)
    ini = config.inipath or "none"
    return (
        f"pytest took {', '.join(value for _, value in found)} for test path(s) when it chose the rootdir "
        f"({config.rootpath}, ini file: {ini}): write {written} (with '=')"
    )
