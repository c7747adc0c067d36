"""SGLang diffusion-server protocol: the only definitions shared by the plugin and the reference server.

Covers the perf-log record (``performance.log``, one JSON line per request), the load marker
printed on stdout, the environment variables that switch stage logging on, the HTTP paths and the
image output formats.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

# Environment read by the server.
STAGE_LOGGING_ENV = "SGLANG_DIFFUSION_STAGE_LOGGING"
PERF_LOG_DIR_ENV = "SGLANG_PERF_LOG_DIR"
PERF_LOG_FILE = "performance.log"
PERF_RECORD_TAG = "pipeline_stage_metrics"
PERF_DUMP_TAG = "server_perf_dump"  # the file a request's ``perf_dump_path`` names
COMMIT_ENV = "SGLANG_GIT_COMMIT"  # the perf record's commit_hash
# Not SGLang's: ``PID:SOCKET`` of the reference server's fork server (``refserver.forkserver``, docs/refserver.md).
# ``serve`` then runs as its child.
FORKSERVER_ENV = "DIFFPERF_REFSERVER_FORKSERVER"


def forkserver_in(env: Mapping[str, str]) -> tuple[int, str] | None:
    """The fork server ``env`` names in ``FORKSERVER_ENV``: its pid and socket path (None: none, or malformed)."""
    pid, _, path = env.get(FORKSERVER_ENV, "").partition(":")
    return (int(pid), path) if pid.isdigit() and path else None


# Printed on stdout once the model is built, before warmup.
LOAD_MARKER = "[server-load] workers_ready_monotonic_ns="

# HTTP API (OpenAI-style subset served by `sglang serve` for diffusion models).
HEALTH_PATH = "/health"
MODELS_PATH = "/v1/models"
IMAGES_PATH = "/v1/images/generations"
IMAGE_EDITS_PATH = "/v1/images/edits"
VIDEOS_PATH = "/v1/videos"
LIVENESS_PATH = "/liveness"

# Image outputs: the ``output_format`` values the server knows and the file extension of each.
IMAGE_FORMAT_EXTS = {"png": "png", "jpeg": "jpg", "jpg": "jpg", "webp": "webp"}
IMAGE_EXTS = tuple(dict.fromkeys(IMAGE_FORMAT_EXTS.values()))  # png, jpg, webp

# Stage names used by SGLang's standard pipelines, in execution order.
INPUT_VALIDATION_STAGE = "InputValidationStage"
TEXT_ENCODING_STAGE = "TextEncodingStage"
LATENT_PREPARATION_STAGE = "LatentPreparationStage"
TIMESTEP_PREPARATION_STAGE = "TimestepPreparationStage"
DENOISING_STAGE = "DenoisingStage"
DECODING_STAGE = "DecodingStage"
STANDARD_STAGES = (
    INPUT_VALIDATION_STAGE,
    TEXT_ENCODING_STAGE,
    LATENT_PREPARATION_STAGE,
    TIMESTEP_PREPARATION_STAGE,
    DENOISING_STAGE,
    DECODING_STAGE,
)
DECODING_STAGE_SUFFIX = DECODING_STAGE  # SGLang judges every stage named *DecodingStage as a decoder
PER_FRAME_STAGE = "per_frame_generation"  # the baseline's per-frame time of a video (a stages_ms key, not a stage)

MEMORY_SNAPSHOT_KEYS = ("load_peak", "runtime_peak", "warmup_peak")


class MemorySnapshot(BaseModel):
    """Memory figures in MiB; device fields are 0 on CPU."""

    model_config = ConfigDict(extra="allow")

    allocated_mb: float = 0.0
    reserved_mb: float = 0.0
    peak_allocated_mb: float = 0.0
    peak_reserved_mb: float = 0.0
    peak_host_anon_mb: float = 0.0


class StageRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    execution_time_ms: float
    is_denoising: bool = False


class PerfRecord(BaseModel):
    """One line of ``performance.log``."""

    model_config = ConfigDict(extra="allow")

    request_id: str
    timestamp: str = ""
    commit_hash: str | None = None
    tag: str = PERF_RECORD_TAG
    stages: list[StageRecord] = Field(default_factory=list)
    steps: list[float] = Field(default_factory=list)
    total_duration_ms: float
    memory_snapshots: dict[str, MemorySnapshot] = Field(default_factory=dict)


def parse_load_marker(line: str) -> int | None:
    """Return the monotonic ns from a load-marker line, or None if the line is not one.

    Only the leading digits count: another thread's log output may follow them on the same line.
    """
    at = line.find(LOAD_MARKER)
    if at < 0:
        return None
    digits = re.match(r"\s*(\d+)", line[at + len(LOAD_MARKER) :])
    return int(digits[1]) if digits else None
