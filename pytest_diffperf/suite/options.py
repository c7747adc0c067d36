"""Command-line options and ini keys, defined once as the fields of a frozen ``Settings``, each value parsed once.

Every option is also an ini key in ``[tool.pytest.ini_options]`` (``--diffperf-cases`` ->
``diffperf_cases``); the command line wins. Paths from the ini file are relative to the rootdir,
paths from the command line to the invocation directory.
"""

from __future__ import annotations

import ast
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args, overload

import pytest
from packaging.version import Version

from .._util.text import truthy
from .._util.values import (
    BadValue,
    choice,
    count,
    count_or_zero,
    fraction,
    fraction_below_one,
    seconds,
    seconds_or_zero,
)
from ..consistency.frames import DEFAULT_FRAMES, FrameSpec, parse_frames_spec
from ..consistency.gtsource import GTSpec, is_remote_text, parse_gt_source
from ..errors import DiffperfError
from ..platforms import Platform, platform_value
from ..serving.sidespec import SideSpec, parse_side_spec
from ..sharding.devices import device_list

if TYPE_CHECKING:  # their modules load once the plugin runs (see the parsers below), not with a plain pytest
    from ..perf.limits import Preset
    from ..regen.policy import RegenPolicy
    from ..results.model import InconclusiveMode
    from ..serving.abservers import ServerMode
    from ..serving.interference import DeviceMode

LAST = "last"  # --diffperf-compare-to's word for the history's latest run
MIN_BUSY_SHARE = 0.001  # --diffperf-busy-share: 0.1 % of the machine
NoiseMode = Literal["auto", "on", "off"]  # --diffperf-static-noise
PairSharing = Literal["group", "scenario"]  # --diffperf-ab-pairs
OPTION = "option"  # the key of a Settings field's Option in its metadata
T = TypeVar("T")


@dataclass(frozen=True)
class Option:
    flag: str
    help: str
    parse: Callable[[str], object]  # the value's text to the value (BadValue or DiffperfError if it is not one)
    default: str | None = None
    is_path: bool = False  # relative to the rootdir (ini) or the invocation directory (command line)
    is_flag: bool = False  # takes no value on the command line; ini: true/false
    words: tuple[str, ...] = ()  # values of a path option kept as they are, never made a path
    kept: Callable[[str], bool] | None = None  # values of a path option kept as they are (a remote source)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def ini_type(self) -> Literal["bool", "int", "float", "string"]:
        """The ini key's type as pytest reads it (a TOML table's native values; an ini file's text converted)."""
        if self.is_flag:
            return "bool"
        if self.parse in (count, count_or_zero):
            return "int"
        return "float" if self.parse in (seconds, seconds_or_zero) else "string"


@overload
def option(flag: str, help: str, parse: Callable[[str], T], default: None = None) -> T | None: ...
@overload
def option(flag: str, help: str, parse: Callable[[str], T], default: str) -> T: ...
def option(flag: str, help: str, parse: Callable[[str], T], default: str | None = None) -> T | None:
    """A Settings field read from option ``flag`` (and its ini key), its value parsed by ``parse``."""
    value: T | None = field(metadata={OPTION: Option(flag, help, parse, default)})
    return value


def path_option(flag: str, help: str, *, words: tuple[str, ...] = ()) -> Path | None:
    """A Settings field holding a path (``words``: values kept as given)."""
    value: Path | None = field(metadata={OPTION: Option(flag, help, Path, is_path=True, words=words)})
    return value


def gt_source_option(flag: str, help: str) -> GTSpec | None:
    """A Settings field naming ground truth: a path, or a remote source kept as given."""
    value: GTSpec | None = field(
        metadata={OPTION: Option(flag, help, parse_gt_source, is_path=True, kept=is_remote_text)}
    )
    return value


def switch(flag: str, help: str) -> bool:
    """A Settings field of a flag: on when given (ini: true/false)."""
    value: bool = field(metadata={OPTION: Option(flag, help, truthy, "false", is_flag=True)})
    return value


# The parsers below import their words when first called: those modules load once the plugin runs.
def _preset(text: str) -> Preset:
    from ..perf.limits import PRESETS

    return PRESETS[choice(tuple(PRESETS))(text)]


def _shard(text: str) -> tuple[int, int]:
    from ..sharding.plan import shard_spec

    return shard_spec(text)


def _policy(text: str) -> RegenPolicy:
    from ..regen.policy import POLICIES

    return choice(POLICIES)(text)


def _server_mode(text: str) -> ServerMode:
    from ..serving.abservers import SERVER_MODES

    return choice(SERVER_MODES)(text)


def _inconclusive(text: str) -> InconclusiveMode:
    from ..results.model import InconclusiveMode

    modes: tuple[InconclusiveMode, ...] = get_args(InconclusiveMode)
    return choice(modes)(text)


def _device_mode(text: str) -> DeviceMode:
    from ..serving.interference import DEVICE_MODES

    return choice(DEVICE_MODES)(text)


def _prestart(text: str) -> int | None:
    """``--diffperf-ab-prestart``: process pairs started ahead (0 or more), or auto (None: decided per run)."""
    if text.strip().lower() == "auto":
        return None
    try:
        return count_or_zero(text)
    except BadValue:
        raise BadValue(f"expected an integer >= 0 or auto, got {text!r}") from None


def _side(flag: str) -> Callable[[str], SideSpec]:
    """A/B's SPEC of one side (``serving.sidespec``)."""
    return lambda text: parse_side_spec(text, flag)


def _share(text: str) -> float | None:
    """``--diffperf-busy-share``: a share of the machine in (0, 1], or off (None)."""
    if text.strip().lower() == "off":
        return None
    share = fraction(text)
    if not MIN_BUSY_SHARE <= share <= 1:  # below it, any process at all is "busy": every fail inconclusive
        raise BadValue(
            f"expected a share of the machine between {MIN_BUSY_SHARE:.1%} and 100% (25% or 0.25), or off, got {text!r}"
        )
    return share


@dataclass(frozen=True)
class Settings:
    """The plugin's configuration for one pytest run, each value parsed: a field per option, named by its dest
    (``--diffperf``'s: ``profile``). The fields define the options, in ``--help``'s order."""

    profile: str | None = option(
        "--diffperf", "run the baseline scenarios, judged with tolerance PROFILE (pr_test, long_term, ...)", str
    )
    diffperf_baselines: Path | None = path_option(
        "--diffperf-baselines", "perf baseline file, or an SGLang perf_baselines/ directory"
    )
    diffperf_hardware: Platform | None = option(
        "--diffperf-hardware", "platform (h100, b200, 5090, xpu_b60, npu, musa, cpu; aliases accepted)", platform_value
    )
    diffperf_cases: Path | None = path_option(
        "--diffperf-cases",
        "case definitions: a JSON case file, SGLang's gpu_cases.py (or a checkout or wheel holding it), "
        "or sglang (the installed package)",
        words=("sglang",),
    )
    diffperf_server: str = option(
        "--diffperf-server",
        "server launcher: sglang, reference (the bundled CPU server), or a registered one",
        str,
        "sglang",
    )
    diffperf_preset: Preset = option("--diffperf-preset", "limit-formula preset", _preset, "sglang")
    diffperf_json: Path | None = path_option(
        "--diffperf-json", "write one result row per measured request to this JSON file"
    )
    diffperf_startup_timeout: float = option(
        "--diffperf-startup-timeout", "seconds to wait for a server to become ready", seconds, "1200"
    )
    diffperf_request_timeout: float = option(
        "--diffperf-request-timeout", "seconds per request when a case sets no timeout_s", seconds, "600"
    )
    diffperf_shard: tuple[int, int] | None = option(
        "--diffperf-shard", "run only shard K of N (1-based, e.g. 2/4); shards are balanced server groups", _shard
    )
    diffperf_shard_id: int | None = option(
        "--diffperf-shard-id", "shard K (1-based), with --diffperf-num-shards N", count
    )
    diffperf_num_shards: int | None = option(
        "--diffperf-num-shards", "number of shards N, with --diffperf-shard-id K", count
    )
    diffperf_devices: tuple[str, ...] | None = option(
        "--diffperf-devices",
        "devices to split among xdist workers, e.g. 0,1,2,3 (default: *_VISIBLE_DEVICES)",
        device_list,
    )
    regen_baselines: bool = switch(
        "--regen-baselines", "measure the selected scenarios and write them into the baseline file"
    )
    regen_policy: RegenPolicy = option(
        "--regen-policy", "regeneration policy: replace, improve or tighten (see docs/regen.md)", _policy, "replace"
    )
    regen_min_improvement: float = option(
        "--regen-min-improvement", "e2e gain the improve policy needs (0.05 or 5%%)", fraction_below_one, "5%"
    )
    regen_dry_run: bool = switch("--regen-dry-run", "regenerate, print the summary and a diff, write nothing")
    diffperf_gt_dir: GTSpec | None = gt_source_option(
        "--diffperf-gt-dir",
        "ground truth: a folder (SGLang names), sglang (the case lists' release's pinned data repository), "
        "github:OWNER/REPO@REV[:PATH] or a URL; else SGLANG_CONSISTENCY_GT_DIR",
    )
    diffperf_thresholds: Path | None = path_option(
        "--diffperf-thresholds", "consistency thresholds: a file or consistency_thresholds/ folder"
    )
    diffperf_clip_model: str = option(
        "--diffperf-clip-model", "open_clip architecture for the CLIP similarity", str, "ViT-L-14"
    )
    diffperf_clip_pretrained: str = option(
        "--diffperf-clip-pretrained", "CLIP weights: open_clip tag, local file, or none", str, "openai"
    )
    diffperf_frames: FrameSpec = option(
        "--diffperf-frames",
        "video frames to compare: first,mid,last | all | every:K",
        parse_frames_spec,
        DEFAULT_FRAMES,
    )
    diffperf_artifacts: Path | None = path_option(
        "--diffperf-artifacts", "write comparison images and metrics per case here"
    )
    regen_ground_truth: bool = switch(
        "--regen-ground-truth", "write the outputs as ground truth instead of comparing them"
    )
    diffperf_suites: str | None = option(
        "--diffperf-suites",
        "SGLang CI suites to read from SGLang's case lists, comma-separated (default: those its CI runs on the platform)",
        str,
    )
    diffperf_sglang_semantics: str | None = option(
        "--diffperf-sglang-semantics",
        "judge SGLang's case lists by the rules of this SGLang release (e.g. 0.5.12) instead of the one detected",
        str,
    )
    diffperf_dry_run: bool = switch(
        "--diffperf-dry-run", "print each selected scenario's server command, environment and request; start nothing"
    )
    diffperf_base: SideSpec | None = option(
        "--diffperf-base",
        "A/B: judge each scenario against this base build, run side by side on fresh servers; SPEC: current, "
        "or 'python=PATH; program=CMD; pythonpath=DIR; env=NAME=VALUE; args=SERVE ARGS' (docs/verdicts.md)",
        _side("--diffperf-base"),
    )
    diffperf_candidate: SideSpec = option(
        "--diffperf-candidate",
        "A/B: how the candidate is served (SPEC, as --diffperf-base)",
        _side("--diffperf-candidate"),
        "current",
    )
    diffperf_ab_request_pairs: int = option(
        "--diffperf-ab-request-pairs", "A/B: request pairs per process pair", count, "4"
    )
    diffperf_ab_max_process_pairs: int = option(
        "--diffperf-ab-max-process-pairs", "A/B: fresh process pairs per scenario at most", count, "10"
    )
    diffperf_ab_max_requests: int = option(
        "--diffperf-ab-max-requests", "A/B: measured requests per scenario at most, both sides", count, "80"
    )
    diffperf_ab_min_process_pairs: int = option(
        "--diffperf-ab-min-process-pairs",
        "A/B: process pairs before any verdict (1 only where calibrated priors show no per-process offsets)",
        count,
        "2",
    )
    diffperf_ab_tolerance: float | None = option(
        "--diffperf-ab-tolerance",
        "A/B: the e2e, denoising-stage and step change never called unchanged (default: the profile's)",
        fraction,
    )
    diffperf_ab_servers: ServerMode = option(
        "--diffperf-ab-servers",
        "A/B: together (base and candidate side by side) or one-at-a-time (a device cannot hold both)",
        _server_mode,
        "together",
    )
    diffperf_ab_pairs: PairSharing = option(
        "--diffperf-ab-pairs",
        "A/B: group (a server group's scenarios share each process pair) or scenario (fresh pairs per scenario)",
        choice(get_args(PairSharing)),
        "group",
    )
    diffperf_ab_prestart: int | None = option(
        "--diffperf-ab-prestart",
        "A/B: process pairs started ahead of the one measuring, at most (as many as the scenarios are projected "
        "to need; auto: 3 on CPU servers, as many as the devices hold apart up to 3, else 0)",
        _prestart,
        "auto",
    )
    diffperf_allow_empty: bool = switch(
        "--diffperf-allow-empty",
        "a run that judged nothing (every scenario skipped or deselected) passes (default: it exits 5, saying so)",
    )
    diffperf_inconclusive: InconclusiveMode = option(
        "--diffperf-inconclusive",
        "an inconclusive verdict: report (the test shows INCONCLUSIVE, the run does not fail) or fail",
        _inconclusive,
        "report",
    )
    diffperf_static_noise: NoiseMode = option(
        "--diffperf-static-noise",
        "judge stored-baseline timing checks with the run's noise: auto (on cpu, for cases of 2+ requests), on, off",
        choice(get_args(NoiseMode)),
        "auto",
    )
    diffperf_remeasure: int = option(
        "--diffperf-remeasure", "fresh servers a static scenario may be measured on (1: never again)", count, "3"
    )
    diffperf_noise: Path | None = path_option(
        "--diffperf-noise", "noise priors calibrated for this runner class (JSON; docs/verdicts.md)"
    )
    diffperf_busy_share: float | None = option(
        "--diffperf-busy-share",
        "a static fail measured while other processes took more than this share of the CPUs (or of a device's "
        "memory) is re-measured on a quiet machine, else inconclusive (machine busy); off: never",
        _share,
        "25%",
    )
    diffperf_quiet_wait: float = option(
        "--diffperf-quiet-wait",
        "seconds to wait for a quiet machine (a busy fail; in all, for the whole run, 0: never wait) or a free "
        "device (--diffperf-busy-device wait)",
        seconds_or_zero,
        "120",
    )
    diffperf_busy_device: DeviceMode = option(
        "--diffperf-busy-device",
        "a server's device held by another process: report (say which and start), wait (then fail), fail",
        _device_mode,
        "report",
    )
    diffperf_log_dir: Path | None = path_option(
        "--diffperf-log-dir",
        "server logs go in a new folder here (default: pytest's basetemp, which keeps the last 3 runs)",
    )
    diffperf_progress_every: float = option(
        "--diffperf-progress-every",
        "seconds between progress lines while a server loads or a request runs",
        seconds,
        "15",
    )
    diffperf_log_tail: int | None = option(  # None: by --tb
        "--diffperf-log-tail", "server log lines in a failure message (default: 200, with --tb=short 20)", count_or_zero
    )
    diffperf_html: Path | None = path_option(
        "--diffperf-html", "write a self-contained HTML report here (needs the report extra)"
    )
    diffperf_history: Path | None = path_option(
        "--diffperf-history", "append this run's results, with provenance, to this history folder"
    )
    diffperf_compare_to: Path | None = path_option(
        "--diffperf-compare-to",
        "compare this run with an earlier --diffperf-json file, or 'last' (the latest run of --diffperf-history)",
        words=(LAST,),
    )
    regen_force: bool = switch(
        "--regen-force", "regenerate even where the baseline file's platform is not the measured hardware"
    )
    accept_busy: bool = switch(
        "--accept-busy",
        "regenerate even from a measurement taken while other processes took the machine (said in the metadata)",
    )
    regen_description: str | None = option(
        "--regen-description", "replace the baseline file's metadata.description with this text", str
    )


OPTIONS = tuple(f.metadata[OPTION] for f in fields(Settings))
BY_DEST = {opt.dest: opt for opt in OPTIONS}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("diffperf", "diffusion serving performance regressions")
    for opt in OPTIONS:
        if opt.is_flag:
            group.addoption(opt.flag, dest=opt.dest, action="store_true", default=None, help=opt.help)
        else:
            metavar = "PROFILE" if opt.flag == "--diffperf" else opt.dest.rsplit("_", 1)[-1].upper()
            group.addoption(opt.flag, dest=opt.dest, default=None, metavar=metavar, help=opt.help)
        parser.addini(opt.dest, opt.help.replace("%%", "%"), type=declared_type(opt), default=None)


TYPED_NUMBERS = Version(pytest.__version__).release >= (8, 4)  # pytest reads int and float ini keys


def declared_type(opt: Option) -> Literal["bool", "int", "float", "string"]:
    """The ini type pytest is told: ``opt.ini_type``, but ``string`` for numbers before pytest 8.4 (which added
    ``int`` and ``float``; the plugin's own parser then reads the text, as it reads the command line)."""
    return opt.ini_type if TYPED_NUMBERS or opt.ini_type in ("bool", "string") else "string"


NON_STRING_DEPRECATION = "Passing a value that is not a string to a 'string'-typed ini option"
INI_EXPECTED = {"bool": "true or false (1/0, yes/no, on/off)", "int": "an integer", "float": "a number of seconds",
                "string": "a string"}  # fmt: skip


def ini_value(config: pytest.Config, dest: str) -> object:
    """The ini key's value (None: unset), read as its declared type; a value of another type (a TOML number where
    text belongs, a list, a word where a number belongs) is a UsageError naming the key and its file."""
    opt = BY_DEST[dest]
    where = f"diffperf: ini key {dest} ({config.inipath})"
    try:
        with warnings.catch_warnings():  # pytest 9.2 deprecates a list for a string key: rejected below, by name
            warnings.filterwarnings("ignore", NON_STRING_DEPRECATION, pytest.PytestDeprecationWarning)
            value = config.getini(dest)
    except (TypeError, ValueError, pytest.UsageError) as exc:
        cause = exc.__cause__ if isinstance(exc, pytest.UsageError) else exc  # pytest 9.2 wraps its error
        if not isinstance(cause, (TypeError, ValueError)):
            raise
        got = _got(str(cause))
        listed = _listed(got.removeprefix("list: "))
        if listed is None:
            quote = " (write it quoted)" if opt.ini_type == "string" else ""
            raise pytest.UsageError(f"{where}: expected {INI_EXPECTED[opt.ini_type]}{quote}, got {got}") from None
        value = listed
    if isinstance(value, list):
        shown = ", ".join(map(str, value))
        raise pytest.UsageError(f"{where}: expected {INI_EXPECTED[opt.ini_type]}, got a list ({shown})")
    return value


def _got(text: str) -> str:
    """The value in pytest's (or int()'s, float()'s) words about it: ``... got int: 5`` -> ``int: 5``,
    ``invalid truth value 'ture'`` -> ``'ture'``, ``... but got: [1]`` -> ``[1]``."""
    if "got " in text:
        return text.rsplit("got ", 1)[-1]
    return text.removeprefix("invalid truth value ").rsplit(": ")[-1]


def _listed(text: str) -> list[object] | None:
    """The list pytest shows as ``text`` (its repr of a TOML array), or None when ``text`` shows no list."""
    if not text.startswith("["):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, list) else None


def option_value(config: pytest.Config, dest: str, *, early: bool = False) -> object:
    """The raw value of an option: command line, else ini key, else default (None if unset). ``early``: read
    before pytest has parsed the command line whole (in ``pytest_load_initial_conftests``)."""
    return _raw(config, BY_DEST[dest], early=early)[0]


def option_path(config: pytest.Config, dest: str, *, early: bool = False) -> Path | None:
    """A path option's value as ``read_settings`` resolves it (None if unset)."""
    opt = BY_DEST[dest]
    raw, base, _ = _raw(config, opt, early=early)
    return None if raw is None else _resolved(base / str(raw))


def _raw(config: pytest.Config, opt: Option, *, early: bool = False) -> tuple[object, Path, str]:
    """The option's value, the folder a relative path is taken from, and where the value was given."""
    cmdline = getattr(config.known_args_namespace, opt.dest, None) if early else config.getoption(opt.dest)
    raw, base, source = cmdline, config.invocation_params.dir, opt.flag
    if raw == "" and opt.flag != "--diffperf":  # --diffperf= has its own message (plugin.py)
        raise pytest.UsageError(f"diffperf: {opt.flag}: expected a value, got nothing (leave the option out instead)")
    if raw is None:
        raw, base, source = ini_value(config, opt.dest), config.rootpath, f"ini key {opt.dest} ({config.inipath})"
    return (raw if raw not in (None, "") else opt.default), Path(base), source


def read_settings(config: pytest.Config) -> Settings:
    """Every option parsed into its type (one DiffperfError naming the option on the first bad value)."""
    values: dict[str, Any] = {}
    for f in fields(Settings):
        opt: Option = f.metadata[OPTION]
        raw, base, source = _raw(config, opt)
        values[f.name] = None if raw is None else _parse(opt, _text(raw), base, source)
    return Settings(**values)


def _text(raw: object) -> str:
    """An option's value as text: an ini key's typed value as it was written (``0``, not ``0.0``; ``true``)."""
    if isinstance(raw, bool):
        return str(raw).lower()
    if isinstance(raw, float) and raw.is_integer():
        return str(int(raw))
    return str(raw)


def _resolved(path: Path) -> Path:
    """``path`` with its symlinks resolved; a symlink loop stays as given (its reader names the file)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # Python < 3.13 raises RuntimeError for a loop
        return Path(os.path.abspath(path))


def _parse(opt: Option, text: str, base: Path, source: str) -> object:
    if opt.is_path and text not in opt.words and not (opt.kept and opt.kept(text)):
        text = str(_resolved(base / text))
    try:
        return opt.parse(text)
    except BadValue as exc:
        raise DiffperfError(str(exc), source=source) from None
    except DiffperfError as exc:
        if exc.source != opt.flag or source == opt.flag:
            raise
        where = ": ".join(p for p in (exc.source, exc.key) if p)
        message = str(exc).removeprefix(f"{where}: ")
        raise DiffperfError(message, source=source, key=exc.key) from None  # named where it was given: the ini


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
