"""`diffperf show FILE [SCENARIO...]`: every check the engine would make, with its limit."""

from __future__ import annotations

import argparse
import json
import textwrap
from dataclasses import asdict
from typing import Any

from .._util.text import did_you_mean, format_table
from ..errors import DiffperfError
from ..perf.baselines import BaselineSet, load_baselines
from ..perf.limits import Check, JudgeRules, get_preset, plan_checks
from ..perf.schema import ScenarioBaseline
from ..protocol import DENOISING_STAGE, PER_FRAME_STAGE

VIDEO_MARKERS = ("t2v", "i2v", "v2v", "ref2v", "video")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "show",
        help="print the checks and limits of baseline scenarios",
        description="Print, per scenario, every check the limit engine would make: metric, expected "
        "value, relative tolerance, absolute pad and limit. Environment tolerance overrides "
        "(SGLANG_*_TOLERANCE) apply, as in a test run.",
    )
    parser.add_argument("file", metavar="FILE", help="a baseline file or perf_baselines/ folder")
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help="default: all")
    parser.add_argument("--profile", default="pr_test", help="tolerance profile (default: pr_test)")
    parser.add_argument("--hardware", help="platform, to pick the file in a perf_baselines/ folder")
    parser.add_argument("--preset", default="sglang", help="limit preset (default: sglang)")
    parser.add_argument("--runner", help="runner name for runner_overrides (default: $RUNNER_NAME)")
    parser.add_argument(
        "--video",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="treat scenarios as video (default: guessed from the scenario)",
    )
    parser.add_argument("--num-frames", type=int, help="frames per video (enables the per-frame check)")
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    parser.set_defaults(func=run)


def is_video_scenario(name: str, scenario: ScenarioBaseline) -> bool:
    """Guess: a per_frame_generation stage, or a video marker in the scenario name."""
    return PER_FRAME_STAGE in scenario.stages_ms or any(m in name.lower() for m in VIDEO_MARKERS)


def run(args: argparse.Namespace) -> int:
    if args.num_frames is not None and args.num_frames < 1:
        raise DiffperfError(f"expected a positive number of frames, got {args.num_frames}", source="--num-frames")
    baselines = load_baselines(args.file, args.hardware, runner_name=args.runner)
    rules = JudgeRules(baselines.profile(args.profile), get_preset(args.preset), tuple(baselines.step_fractions))
    names = args.scenarios or list(baselines.scenarios)
    for name in names:
        _require(baselines, name)
    plans = {}
    for name in names:
        scenario = baselines.scenarios[name]
        is_video = is_video_scenario(name, scenario) if args.video is None else args.video
        checks = plan_checks(
            scenario,
            rules,
            is_video=is_video,
            num_frames=args.num_frames,
            denoising_stages={s for s in scenario.stages_ms if s.endswith(DENOISING_STAGE)},
        )
        plans[name] = (is_video, checks)
    if args.json:
        print(json.dumps(_as_data(args, baselines, plans), indent=2))
    else:
        _print_text(args, baselines, plans)
    return 0


def _require(baselines: BaselineSet, name: str) -> None:
    if name not in baselines.scenarios:
        hint = did_you_mean(name, baselines.scenarios)
        raise DiffperfError(f"no scenario {name!r}{hint}", source=str(baselines.primary), key="scenarios")


def _as_data(
    args: argparse.Namespace, baselines: BaselineSet, plans: dict[str, tuple[bool, list[Check]]]
) -> dict[str, Any]:
    return {
        "file": str(baselines.primary),
        "profile": args.profile,
        "preset": args.preset,
        "runner_prefix": baselines.runner_prefix,
        "scenarios": {
            name: {
                "source": str(baselines.source[name]),
                "is_video": is_video,
                "checks": [asdict(c) for c in checks],
            }
            for name, (is_video, checks) in plans.items()
        },
    }


def _print_text(args: argparse.Namespace, baselines: BaselineSet, plans: dict[str, tuple[bool, list[Check]]]) -> None:
    runner = f", runner overrides {baselines.runner_prefix!r}" if baselines.runner_prefix else ""
    print(f"profile {args.profile}, preset {args.preset}{runner}")
    for name, (is_video, checks) in plans.items():
        kind = "video" if is_video else "image"
        print(f"\n{name}  ({baselines.source[name]}, {kind})")
        rows = [("check", "expected", "rel", "pad", "limit", "unit")]
        rows += [(c.name, f"{c.expected:.2f}", f"{c.rel:.1%}", f"{c.pad:g}", f"{c.limit:.2f}", c.unit) for c in checks]
        print(textwrap.indent("\n".join(format_table(rows)), "  "))
