"""Hardware platforms: names and aliases, where SGLang keeps each one's files, what it checks there, and its
visible-devices variable."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from ._util.values import BadValue
from .errors import DiffperfError

# Canonical names: SGLang's GPU platform files, AMD (judged with the default GPU file), the NPU/MUSA
# fragments, our CPU reference server.
Platform = Literal["h100", "b200", "5090", "xpu_b60", "rocm", "npu", "musa", "cpu"]
PLATFORMS: tuple[Platform, ...] = get_args(Platform)

# Matched after lower-casing and removing "_" and "-" (as SGLang does).
_ALIASES: dict[str, Platform] = {
    "sm90": "h100",
    "hopper": "h100",
    "h100": "h100",
    "sm100": "b200",
    "blackwell": "b200",
    "b200": "b200",
    "sm120": "5090",
    "rtx5090": "5090",
    "5090": "5090",
    "xpu": "xpu_b60",
    "bmg": "xpu_b60",
    "xpub60": "xpu_b60",
    "intelxpub60": "xpu_b60",  # SGLang's consistency-file name for the same platform
    "rocm": "rocm",
    "hip": "rocm",
    "amd": "rocm",
    "npu": "npu",
    "ascend": "npu",
    "musa": "musa",
    "cpu": "cpu",
}

# SGLang runs NPU and MUSA machines against the default GPU file, with their fragment merged in,
# and AMD machines against the default GPU file alone.
DEFAULT_GPU: Platform = "h100"
FRAGMENT_PLATFORMS: tuple[Platform, ...] = ("npu", "musa")
DEFAULT_FILE_PLATFORMS: tuple[Platform, ...] = ("rocm", *FRAGMENT_PLATFORMS)

# What SGLang's ``current_platform`` is on each platform: the device kind, and the CUDA architecture
# flags its case lists branch on (``is_blackwell``, ``is_sm120``). The CPU reference server is none.
DeviceKind = Literal["cuda", "hip", "npu", "musa", "xpu", "cpu"]
DEVICE_KINDS: dict[Platform, DeviceKind] = {
    "h100": "cuda",
    "b200": "cuda",
    "5090": "cuda",
    "xpu_b60": "xpu",
    "rocm": "hip",
    "npu": "npu",
    "musa": "musa",
    "cpu": "cpu",
}
CUDA_ARCH_FLAGS: dict[Platform, frozenset[str]] = {"b200": frozenset({"blackwell"}), "5090": frozenset({"sm120"})}

# Fragment files (only `metadata` and `scenarios`), relative to the folder that holds the
# single `perf_baselines.json` or the `perf_baselines/` folder.
FRAGMENTS = ("ascend/perf_baselines_npu.json", "musa/perf_baselines_musa.json")


def fragment_platform(path: Path) -> Platform | None:
    """The NPU/MUSA platform whose fragment ``path`` is (by its last two names, however the path is written)."""
    tail = Path(path).absolute().parts[-2:]
    return next((p for p, rel in zip(FRAGMENT_PLATFORMS, FRAGMENTS, strict=True) if Path(rel).parts == tail), None)


def canonical_platform(name: str) -> Platform:
    """A platform name or alias read at an edge (a command's ``--hardware``, a file's text) as its canonical name;
    DiffperfError if unknown. Everything inward takes the typed :data:`Platform`."""
    try:
        return platform_value(name)
    except BadValue as exc:
        raise DiffperfError(str(exc), source="hardware") from None


def platform_value(name: str) -> Platform:
    """A platform name or alias as its canonical name (an option's parser: BadValue if unknown)."""
    key = name.strip().lower().replace("_", "").replace("-", "")
    if key not in _ALIASES:
        raise BadValue(
            f"unknown platform {name!r}; expected one of: {', '.join(PLATFORMS)} "
            f"(aliases: {', '.join(sorted(a for a in _ALIASES if a not in PLATFORMS))})"
        )
    return _ALIASES[key]


def baseline_file_stem(platform: Platform) -> str:
    """Stem of the `perf_baselines/<stem>.json` file a platform is checked against."""
    return DEFAULT_GPU if platform in DEFAULT_FILE_PLATFORMS else platform


def threshold_file_stems(platform: Platform) -> tuple[str, ...]:
    """Candidate stems of `consistency_thresholds/<stem>.json` for a platform, in order."""
    if platform == "xpu_b60":
        return ("xpu_b60", "intel_xpu_b60")
    return (DEFAULT_GPU,) if platform == "rocm" else (platform,)


def device_kind(platform: Platform) -> DeviceKind:
    """SGLang's device kind on a platform (what ``current_platform.is_cuda()`` and its siblings answer)."""
    return DEVICE_KINDS[platform]


def checks_vram(platform: Platform) -> bool:
    """Whether VRAM is judged there: SGLang checks it only on CUDA, the only platform whose server writes it."""
    return device_kind(platform) == "cuda"


def checks_host_anon(platform: Platform) -> bool:
    """Whether anonymous host memory is judged there: with VRAM on CUDA, and on the CPU reference server."""
    return device_kind(platform) in ("cuda", "cpu")


# Each platform's visible-devices variable (CUDA's for the GPU platforms and the CPU).
CUDA_ENV = "CUDA_VISIBLE_DEVICES"
PLATFORM_ENV: dict[Platform, str] = {
    "npu": "ASCEND_RT_VISIBLE_DEVICES",
    "musa": "MUSA_VISIBLE_DEVICES",
    "xpu_b60": "ZE_AFFINITY_MASK",
}
DEVICE_ENV_VARS = (CUDA_ENV, *PLATFORM_ENV.values())


def device_env_var(hardware: Platform | None) -> str:
    """The variable that lists the visible devices of ``hardware`` (CUDA's when unknown)."""
    return PLATFORM_ENV.get(hardware, CUDA_ENV) if hardware else CUDA_ENV


@dataclass(frozen=True)
class Located:
    """Where a path given for one kind of SGLang file led: a file, or a per-platform folder and its file."""

    file: Path | None  # the file given, or the platform's file in the folder (None: the folder has none)
    folder: Path | None = None  # the per-platform folder, when the path was (or held) one
    available: tuple[str, ...] = ()  # the folder's file stems


def locate(
    path: str | Path, hardware: Platform | None, *, single: str, folder: str, stems: Callable[[Platform], Sequence[str]]
) -> Located:
    """Resolve a file, a folder holding ``single`` or ``folder/``, or that folder (whose platform file is
    the first ``<stem>.json`` of ``stems(hardware)``). DiffperfError when nothing is there, or a folder
    comes without a hardware platform."""
    path = Path(path)
    if path.is_dir() and (path / folder).is_dir():
        path = path / folder
    elif path.is_dir() and (path / single).is_file():
        path = path / single
    if path.is_file():
        return Located(path)
    if not path.is_dir():
        what = (
            "expected a JSON file, got a FIFO, socket or device"
            if path.exists()
            else "a broken symlink, or a loop of them"
            if path.is_symlink()
            else "file not found"
        )
        raise DiffperfError(what, source=str(path))
    available = tuple(sorted(p.stem for p in path.glob("*.json")))
    if hardware is None:
        raise DiffperfError(
            f"a {folder}/ folder needs a hardware platform; files here: {', '.join(available) or 'none'}",
            source=str(path),
        )
    own = next((path / f"{stem}.json" for stem in stems(hardware) if (path / f"{stem}.json").is_file()), None)
    return Located(own, path, available)
