"""Checks made once the settings and files are read and before any server starts: what would otherwise fail
only at the end of the run (an output path) or once per scenario, after its server ran (ground truth).

Every path the run writes is checked here: writable, and not a file (or inside a folder) the run reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .._util.ci import STEP_SUMMARY_ENV, step_summary_path
from .._util.outputs import Inputs, check_folder, check_writable
from ..cases import Case
from ..consistency.config import ConsistencyConfig
from .options import Settings

OUTPUT_FILES = ("diffperf_json", "diffperf_html")  # the run's output files
OUTPUT_FOLDERS = ("diffperf_log_dir", "diffperf_history")  # folders it writes into (artifacts: with consistency)
INPUT_OPTIONS = ("diffperf_cases", "diffperf_thresholds", "diffperf_noise", "diffperf_compare_to")


def flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def inputs(settings: Settings, baseline_files: Iterable[Path], consistency: ConsistencyConfig | None) -> Inputs:
    """Every file or folder the run reads, with the option that names it."""
    found = [(path, "--diffperf-baselines") for path in baseline_files]
    found += [(p, flag(dest)) for dest in INPUT_OPTIONS if (p := getattr(settings, dest)) is not None and p.exists()]
    if consistency is not None and consistency.gt_dir is not None and not consistency.regen:
        found.append((consistency.gt_dir, "--diffperf-gt-dir"))
    return found


def check_up_front(
    settings: Settings,
    cases: Iterable[Case],
    consistency: ConsistencyConfig | None,
    baseline_files: Iterable[Path] = (),
) -> None:
    """DiffperfError on the first problem: an output path that cannot be written or would replace an input,
    ground truth that is broken."""
    reads = list(inputs(settings, baseline_files, consistency))
    for dest in OUTPUT_FILES:
        if (path := getattr(settings, dest)) is not None:
            check_writable(path, flag(dest), reads)
    for dest in OUTPUT_FOLDERS:
        if (path := getattr(settings, dest)) is not None:
            check_folder(path, flag(dest), reads)
    summary = step_summary_path()
    if summary is not None:
        check_writable(summary, STEP_SUMMARY_ENV, reads)
    if consistency is not None:
        if consistency.artifacts_dir is not None:
            check_folder(consistency.artifacts_dir, "--diffperf-artifacts", reads)
        if consistency.regen and consistency.gt_dir is not None:
            check_folder(consistency.gt_dir, "--diffperf-gt-dir (written: --regen-ground-truth)", reads)
        from ..consistency.groundtruth import image_ext  # numpy and PIL: loaded by runs that compare
        from ..consistency.preflight import check_ground_truth

        compared = [c for c in cases if c.run_consistency_check]
        check_ground_truth(consistency, [(c.id, c.num_gpus, c.is_video, image_ext(c.output_format)) for c in compared])
