"""What regeneration refuses: figures measured on one platform written into another platform's baseline file.

A baseline file's platform is its fragment's (``ascend/perf_baselines_npu.json``: npu), else its
name's in a ``perf_baselines/`` folder (``h100.json``: h100), else the hardware the run judges
(``--diffperf-hardware``; a single ``perf_baselines.json``). The measured platform is the device's
the servers ran on (``results.provenance.measured_on``: ``cpu`` for the CPU reference server, and for any
server on a machine without an accelerator).
Regeneration starts only when they are the same (a device of no known platform is refused too:
a file's figures must come from its hardware), or with ``--regen-force``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..errors import DiffperfError
from ..perf.baselines import PLATFORM_DIR
from ..platforms import Platform, canonical_platform, fragment_platform

FORCE = "--regen-force"
LARGE_CHANGE = 0.5  # an e2e that moves by more than this is called out before it is written


def file_platform(path: Path, hardware: Platform | None) -> Platform | None:
    """The platform whose figures ``path`` holds (None when neither its place nor the run says)."""
    fragment = fragment_platform(path)
    if fragment is not None:
        return fragment
    if path.parent.name == PLATFORM_DIR:
        try:
            return canonical_platform(path.stem)
        except DiffperfError:
            pass
    return hardware


def check_platforms(
    targets: Iterable[Path],
    hardware: Platform | None,
    device: str,
    measured: str | None,
    force: bool,
    *,
    accept: bool = False,
) -> list[str]:
    """DiffperfError for the first target whose platform is not the measured one (unless ``force``);
    with ``force``, the warnings that were overridden. ``accept``: worded for ``diffperf accept`` (``--force``)."""
    force_option = "--force" if accept else FORCE
    measuring = "the results were measured" if accept else "this run measures"
    warnings = []
    for path in sorted(set(targets)):
        platform = file_platform(path, hardware)
        if platform is None or platform == measured:
            continue
        on = f"{device} ({measured})" if measured else f"{device}, a device of no known platform"
        problem = f"{path} holds {platform} figures, and {measuring} on {on}"
        if not force:
            verb, advice = ("accept", "accept a run on") if accept else ("regenerate", "regenerate on")
            raise DiffperfError(
                f"refusing to {verb}: {problem}; {advice} {platform} hardware, or pass {force_option} to write "
                "these figures anyway",
                source=None if accept else "--regen-baselines",
            )
        warnings.append(f"{force_option}: {problem}; writing them anyway")
    return warnings
