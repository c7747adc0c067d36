"""Checks made once the settings and files are read and before any server starts: what would otherwise fail
only at the end of the run (an output path) or once per scenario, after its server ran (ground truth)."""

from __future__ import annotations

from collections.abc import Iterable

from .._util.outputs import check_writable
from ..cases import Case
from ..consistency.config import ConsistencyConfig
from .options import Settings

OUTPUT_OPTIONS = ("diffperf_json", "diffperf_html")  # the run's output files (those this version has)


def check_up_front(settings: Settings, cases: Iterable[Case], consistency: ConsistencyConfig | None) -> None:
    """DiffperfError on the first problem: an output path that cannot be written, ground truth that is broken."""
    for dest in OUTPUT_OPTIONS:
        path = getattr(settings, dest, None)
        if path is not None:
            check_writable(path, "--" + dest.replace("_", "-"))
    if consistency is not None:
        from ..consistency.groundtruth import image_ext  # numpy and PIL: loaded by runs that compare
        from ..consistency.preflight import check_ground_truth

        compared = [c for c in cases if c.run_consistency_check]
        check_ground_truth(consistency, [(c.id, c.num_gpus, c.is_video, image_ext(c.output_format)) for c in compared])
