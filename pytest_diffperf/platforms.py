"""Hardware platforms: names and aliases, where SGLang keeps each one's files, and its visible-devices variable."""

from __future__ import annotations

from .errors import DiffperfError

# Canonical names: SGLang's GPU platform files, the NPU/MUSA fragments, our CPU reference server.
PLATFORMS = ("h100", "b200", "5090", "xpu_b60", "npu", "musa", "cpu")

# Matched after lower-casing and removing "_" and "-" (as SGLang does).
_ALIASES = {
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
    "npu": "npu",
    "ascend": "npu",
    "musa": "musa",
    "cpu": "cpu",
}

# SGLang runs NPU and MUSA machines against the default GPU file, with their fragment merged in.
DEFAULT_GPU = "h100"
FRAGMENT_PLATFORMS = ("npu", "musa")

# Fragment files (only `metadata` and `scenarios`), relative to the folder that holds the
# single `perf_baselines.json` or the `perf_baselines/` folder.
FRAGMENTS = ("ascend/perf_baselines_npu.json", "musa/perf_baselines_musa.json")


def canonical_platform(name: str) -> str:
    """Map a platform name or alias to its canonical name; DiffperfError if unknown."""
    key = name.strip().lower().replace("_", "").replace("-", "")
    if key not in _ALIASES:
        raise DiffperfError(
            f"unknown platform {name!r}; expected one of: {', '.join(PLATFORMS)} "
            f"(aliases: {', '.join(sorted(a for a in _ALIASES if a not in PLATFORMS))})",
            source="hardware",
        )
    return _ALIASES[key]


def baseline_file_stem(platform: str) -> str:
    """Stem of the `perf_baselines/<stem>.json` file a platform is checked against."""
    canonical = canonical_platform(platform)
    return DEFAULT_GPU if canonical in FRAGMENT_PLATFORMS else canonical


def threshold_file_stems(platform: str) -> tuple[str, ...]:
    """Candidate stems of `consistency_thresholds/<stem>.json` for a platform, in order."""
    canonical = canonical_platform(platform)
    return ("xpu_b60", "intel_xpu_b60") if canonical == "xpu_b60" else (canonical,)


# Each platform's visible-devices variable (CUDA's for the GPU platforms and the CPU).
CUDA_ENV = "CUDA_VISIBLE_DEVICES"
PLATFORM_ENV = {"npu": "ASCEND_RT_VISIBLE_DEVICES", "musa": "MUSA_VISIBLE_DEVICES", "xpu_b60": "ZE_AFFINITY_MASK"}
DEVICE_ENV_VARS = (CUDA_ENV, *PLATFORM_ENV.values())


def device_env_var(hardware: str | None) -> str:
    """The variable that lists the visible devices of ``hardware`` (CUDA's when unknown)."""
    return PLATFORM_ENV.get(canonical_platform(hardware), CUDA_ENV) if hardware else CUDA_ENV
