"""One of SGLang's ``DiffusionTestCase`` objects -> the JSON of a plugin case (``cases.Case``), or why it cannot be one.

The request is the one SGLang's ``get_generate_fn`` (``test_server_utils.py``) builds for the case:
the same generation function is chosen, and every field it sends is mapped to the case field the
plugin's client sends it from (``client.request_body``). The server command and environment are
those of SGLang's ``diffusion_server`` fixture (``test_server_common.py``), flag for flag.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..platforms import Platform, device_kind
from .semantics import LATEST, Semantics

# The generation function get_generate_fn picks (test_server_utils.py), and the plugin task of each.
RequestKind = Literal[
    "generate_image",
    "generate_image_edit",
    "generate_image_edit_url",
    "generate_video",
    "generate_image_to_video",
    "generate_text_image_to_video",
    "generate_text_url_image_to_video",
    "generate_realtime_video",
    "generate_mesh",
    "generate_action",
]
TASKS: dict[str, str] = {
    "generate_image": "text-to-image",
    "generate_image_edit": "image-edit",
    "generate_video": "text-to-video",
    "generate_image_to_video": "image-to-video",
    "generate_text_image_to_video": "text-image-to-video",
    "generate_text_url_image_to_video": "text-image-to-video",
}
NOT_EXPRESSIBLE: dict[str, str] = {
    "generate_image_edit_url": "an image edit whose input images are sent to the server as URLs (multipart url[])",
    "generate_realtime_video": "a realtime video over the websocket API (/v1/realtime_video)",
    "generate_mesh": "a mesh (/v1/meshes)",
    "generate_action": "an action policy output (/v1/actions/generations)",
}
VIDEO_KINDS = frozenset(k for k, task in TASKS.items() if task.endswith("video"))
DEFAULT_VIDEO_SECONDS = 4  # video_seconds = sampling_params.seconds or 4
VIDEO_JOB_TIMEOUT_S = 1200.0  # SGLang waits this long for a video job
AMD_VIDEO_JOB_TIMEOUT_S = 2400.0  # ... and this long on ROCm
LIFTED: dict[str, type | tuple[type, ...]] = {
    "seed": int,
    "num_inference_steps": int,
    "guidance_scale": (int, float),
    "negative_prompt": str,
}
CASE_OUTPUT_FORMATS = ("png", "jpeg", "jpg")
SIZE = re.compile(r"^(\d+)x(\d+)$")
# SGLang checks a case may ask for that the plugin does not run (listed with the case). Not listed: the
# models-API, input-reference and component-accuracy checks most cases have (docs/sglang.md).
UNSUPPORTED_CHECKS = (
    "run_lora_basic_api_check",
    "run_lora_dynamic_load_check",
    "run_lora_dynamic_switch_check",
    "run_multi_lora_api_check",
    "run_lora_effect_check",
)


# Every field of SGLang's three dataclasses in any release from 0.5.6 to 0.5.23, with the value that means
# what that release did before the field existed (read by presence: a release without it gets this one).
KNOWN_FIELDS: dict[str, dict[str, Any]] = {
    "DiffusionTestCase": {
        "id": None, "server_args": None, "sampling_params": None,
        "run_perf_check": True,  # 0.5.10
        "run_consistency_check": False,  # 0.5.11: no consistency check before
        "run_component_accuracy_check": False, "run_models_api_check": False,
        "run_t2v_input_reference_check": False, "run_lora_basic_api_check": False,
        "run_lora_dynamic_load_check": False, "run_lora_dynamic_switch_check": False,
        "run_multi_lora_api_check": False, "run_lora_effect_check": False,
        "perf_repeat_requests": 1,  # 0.5.20: one measured request before
        "perf_warmup_requests": 0,  # 0.5.21
        "expected_model_id": None, "pin_consistency_quality": True,
        "lead_sampling_params": None, "reference_quality": None,  # 0.5.23
    },
    "DiffusionServerArgs": {
        "model_path": None, "modality": None, "custom_validator": None, "num_gpus": 1,
        "tp_size": None, "ulysses_degree": None, "ring_degree": None, "cfg_parallel": None,
        "lora_path": None, "dynamic_lora_path": None, "second_lora_path": None,
        "dit_layerwise_offload": False, "dit_offload_prefetch_size": None, "enable_cache_dit": False,
        "text_encoder_cpu_offload": False, "extras": [], "env_vars": {},
        "warmup_text": 0, "warmup_edit": 0, "warmup": 0,  # client-side warmup requests, 0.5.6-0.5.8
        "enable_warmup": False,  # a server warmup flag, 0.5.8-0.5.12
    },
    "DiffusionSamplingParams": {
        "output_size": "", "prompt": None, "image_path": None, "seconds": 1, "num_frames": None, "fps": None,
        "direct_url_test": False, "output_format": None, "num_outputs_per_prompt": 1, "extras": {},
        "enable_teacache": False,  # 0.5.8-0.5.9
        "expect_audio_output": False, "realtime_num_chunks": None, "realtime_events": [],
        "realtime_perf_thresholds": {}, "realtime_perf_ignore_initial_chunks": 0, "realtime_output_format": None,
    },
}  # fmt: skip
KNOWN_MODALITIES = ("image", "video", "3d", "action")


class Fields:
    """One of SGLang's dataclass objects, read by presence: a field the release lacks reads as ``KNOWN_FIELDS``'s."""

    def __init__(self, obj: Any, kind: str) -> None:
        self._obj, self._defaults = obj, KNOWN_FIELDS[kind]

    def __getattr__(self, name: str) -> Any:
        if hasattr(self._obj, name):
            return getattr(self._obj, name)
        if name in self._defaults:
            return self._defaults[name]
        raise AttributeError(name)


def unknown_fields(obj: Any, kind: str) -> list[tuple[str, Any]]:
    """Fields of ``obj`` this plugin does not know that hold something other than their declared default."""
    out = []
    for f in dataclasses.fields(obj) if dataclasses.is_dataclass(obj) else ():
        if f.name in KNOWN_FIELDS[kind]:
            continue
        value = getattr(obj, f.name)
        default = (
            f.default
            if f.default is not dataclasses.MISSING
            else f.default_factory()
            if f.default_factory is not dataclasses.MISSING
            else dataclasses.MISSING
        )
        if value != default:
            out.append((f.name, value))
    return out


def unreadable(tc: Any, release: str) -> str | None:
    """Why this plugin cannot read case ``tc`` of SGLang ``release`` (a field it does not know set, a kind it
    does not know), or None."""
    what_to_do = "upgrade pytest-diffperf; `diffperf verify-sglang` on this release shows what else differs"
    parts: Mapping[str, Any] = {
        "DiffusionTestCase": tc,
        "DiffusionServerArgs": getattr(tc, "server_args", None),
        "DiffusionSamplingParams": getattr(tc, "sampling_params", None),
    }
    for kind, obj in parts.items():
        for name, value in unknown_fields(obj, kind)[:1]:
            return (
                f"SGLang {release} sets {kind}.{name} = {value!r}, a field pytest-diffperf does not know "
                f"(it may change what the case sends or judges): {what_to_do}"
            )
    modality = getattr(parts["DiffusionServerArgs"], "modality", None)
    if modality not in KNOWN_MODALITIES:
        return (
            f"SGLang {release}'s case is of a kind pytest-diffperf does not know "
            f"(server_args.modality = {modality!r}, known: {', '.join(KNOWN_MODALITIES)}): {what_to_do}"
        )
    return None


@dataclass(frozen=True)
class Converted:
    """A converted case (``case``, the JSON of a ``cases.Case``) or the ``reason`` it cannot be expressed yet."""

    id: str
    suites: tuple[str, ...]
    kind: str
    case: dict[str, Any] | None = None
    reason: str | None = None


def request_kind(modality: str | None, sp: Any) -> RequestKind:
    """The generation function SGLang's ``get_generate_fn`` picks for a case (its selection, line for line)."""
    if modality == "3d":
        return "generate_mesh"
    if modality == "action":
        return "generate_action"
    if modality == "video":
        if sp.realtime_num_chunks is not None:
            return "generate_realtime_video"
        if sp.image_path and sp.prompt:
            return "generate_text_url_image_to_video" if sp.direct_url_test else "generate_text_image_to_video"
        if sp.image_path:
            return "generate_image_to_video"
        return "generate_video"
    if sp.prompt and sp.image_path:
        return "generate_image_edit_url" if sp.direct_url_test else "generate_image_edit"
    return "generate_image"


def convert(
    sglang_case: Any, suites: Sequence[str] = (), semantics: Semantics = LATEST, hardware: Platform = "h100"
) -> Converted:
    """The plugin case for SGLang's ``DiffusionTestCase`` (read after its ``__post_init__``, fields by presence),
    sent, started and judged as ``semantics``' release does on ``hardware``."""
    tc = Fields(sglang_case, "DiffusionTestCase")
    sa = Fields(tc.server_args, "DiffusionServerArgs")
    sp = Fields(tc.sampling_params, "DiffusionSamplingParams")
    kind = request_kind(sa.modality, sp)
    suites = tuple(suites)
    rocm = device_kind(hardware) == "hip"
    if rocm and semantics.has("rocm_ring_skip") and sa.ring_degree is not None and sa.ring_degree > 1:
        reason = (
            f"SGLang's fixture skips it on ROCm: ring attention (ring_degree={sa.ring_degree}) needs Flash Attention"
        )
        return Converted(tc.id, suites, kind, reason=reason)
    if kind in NOT_EXPRESSIBLE:
        return Converted(tc.id, suites, kind, reason=f"not expressible yet: {NOT_EXPRESSIBLE[kind]}")
    images = sp.image_path if isinstance(sp.image_path, list) else [sp.image_path] if sp.image_path else []
    if len(images) > 1:
        return Converted(tc.id, suites, kind, reason=f"not expressible yet: an edit of {len(images)} input images")
    if not sp.prompt and kind != "generate_image_to_video":
        return Converted(tc.id, suites, kind, reason="SGLang's harness skips it: no prompt")
    if sp.num_outputs_per_prompt != 1 and kind in ("generate_image", "generate_image_edit"):
        return Converted(tc.id, suites, kind, reason="not expressible yet: several outputs per request (n > 1)")

    case: dict[str, Any] = {"id": tc.id, "model": sa.model_path, "task": TASKS[kind], "prompt": sp.prompt or ""}
    extra: dict[str, Any] = {}
    extras = dict(sp.extras)
    if kind == "generate_text_url_image_to_video" and not semantics.has("text_url_image_to_video_extras"):
        extras = {}  # built and dropped: the request sends reference_url, fps and num_frames only
    if sp.enable_teacache:
        extra["enable_teacache"] = True
    for key, types in LIFTED.items():
        value = extras.get(key)
        fits = isinstance(value, types) and not isinstance(value, bool)
        if fits and (key != "num_inference_steps" or int(value or 0) >= 1):
            case[key] = extras.pop(key)

    # SGLang's SGLANG_TEST_OUTPUT_SIZE override of output_size is a run-time knob, not part of the case.
    size = str(sp.output_size)
    match = SIZE.match(size)
    if match:
        case["width"], case["height"] = int(match.group(1)), int(match.group(2))
    elif kind != "generate_image_edit":  # openai's multipart encoding drops an empty string: edits send no size
        extra["size"] = size

    if kind in VIDEO_KINDS:
        case["seconds"] = sp.seconds or DEFAULT_VIDEO_SECONDS
        amd = rocm and semantics.has("amd_video_timeout")
        case["timeout_s"] = AMD_VIDEO_JOB_TIMEOUT_S if amd else VIDEO_JOB_TIMEOUT_S
        if kind == "generate_video":
            if sp.num_frames and semantics.has("t2v_num_frames"):
                case["num_frames"] = sp.num_frames
        elif kind != "generate_image_to_video":
            if sp.num_frames is not None:
                case["num_frames"] = sp.num_frames
            if sp.fps is not None:
                case["fps"] = sp.fps
        if kind == "generate_text_url_image_to_video":
            extra["reference_url"] = sp.image_path
        else:
            _reference(case, images)
        if sp.prompt is None:
            extra["prompt"] = None  # image-to-video without a prompt: the field is not sent
    else:
        if sp.output_format in CASE_OUTPUT_FORMATS:
            case["output_format"] = sp.output_format
        elif sp.output_format is not None:
            extra["output_format"] = sp.output_format
        if kind == "generate_image_edit":
            _reference(case, images)
            if sp.num_frames is not None:
                extra["num_frames"] = sp.num_frames
    extra.update(extras)
    if extra:
        case["sglang_request_extra"] = extra

    case["num_gpus"] = sa.num_gpus
    entry: dict[str, Any] = {"serve_args": serve_args(sa, semantics), "extra_env": server_env(sa)}
    if not semantics.has("access_log_exclude"):
        entry["exclude_health_access_log"] = False
    case["frameworks"] = {"sglang": entry}
    case["run_perf_check"] = tc.run_perf_check
    if not tc.run_perf_check and not semantics.has("perf_check_off"):
        case["judged_without_perf_check"] = "nothing"
    case["run_consistency_check"] = tc.run_consistency_check
    case["perf_repeat_requests"] = tc.perf_repeat_requests
    if tc.perf_repeat_requests > 1:
        case["judged_requests"] = "each" if semantics.has("per_request_judging") else "last"
    required = ["expected_e2e_ms", "expected_load_ms"] if semantics.has("e2e_load_baseline_required") else []
    if semantics.has("vram_baseline_required") and tc.run_perf_check:
        required += ["load_peak_vram_mb", "runtime_peak_vram_mb"]  # judged where VRAM is (CUDA)
    if required:
        case["required_baselines"] = required
    if not semantics.has("step_allowances"):
        case["limit_allowances"] = "0.5.12" if semantics.has("decoding_allowance") else "0.5.6"
    warmups = 0 if semantics.has("warmup_requests") else sa.warmup_text + sa.warmup_edit + sa.warmup
    case["perf_warmup_requests"] = tc.perf_warmup_requests + warmups
    not_run = [name for name in UNSUPPORTED_CHECKS if getattr(tc, name, False)]
    not_run += [label for label, on in _other_checks(tc, sp) if on]
    if not_run:
        case["sglang_checks_not_run"] = not_run
    case["sglang_suites"] = list(suites)
    return Converted(tc.id, suites, kind, case=case)


def serve_args(sa: Any, semantics: Semantics = LATEST) -> str:
    """The flags SGLang's ``diffusion_server`` fixture adds after ``--num-gpus``, ``--strict-ports`` included."""
    args = [] if semantics.has("ulysses_from_gpus") else [f"--ulysses-degree {sa.num_gpus}"]
    if sa.tp_size is not None:
        args.append(f"--tp-size {sa.tp_size}")
    if sa.ulysses_degree is not None:
        args.append(f"--ulysses-degree {sa.ulysses_degree}")
    if sa.dit_layerwise_offload:
        args.append("--dit-layerwise-offload true")
    if sa.dit_offload_prefetch_size:
        args.append(f"--dit-offload-prefetch-size {sa.dit_offload_prefetch_size}")
    if sa.text_encoder_cpu_offload:
        args.append("--text-encoder-cpu-offload")
    if sa.ring_degree is not None:
        args.append(f"--ring-degree {sa.ring_degree}")
    if sa.cfg_parallel and semantics.has("cfg_parallel_flag"):
        args.append("--enable-cfg-parallel")
    if sa.lora_path:
        args.append(f"--lora-path {sa.lora_path}")
    if sa.enable_warmup or semantics.has("warmup_always"):
        args.append("--warmup" if semantics.has("warmup_flag") or semantics.has("warmup_always") else "--enable-warmup")
    args.append("--strict-ports")
    args.extend(sa.extras)
    return " ".join(args)


def server_env(sa: Any) -> dict[str, str]:
    """The fixture's environment: ``SGLANG_CACHE_DIT_ENABLED`` for ``enable_cache_dit``, then ``env_vars``."""
    env = {"SGLANG_CACHE_DIT_ENABLED": "true"} if sa.enable_cache_dit else {}
    env.update(sa.env_vars)
    return env


def _reference(case: dict[str, Any], images: list[Any]) -> None:
    if images:
        image = images[0]
        case["reference_image"] = str(image) if isinstance(image, Path) else image


def _other_checks(tc: Any, sp: Any) -> list[tuple[str, bool]]:
    return [
        ("lead_sampling_params", tc.lead_sampling_params is not None),
        ("reference_quality", tc.reference_quality is not None),
        ("expect_audio_output", bool(sp.expect_audio_output)),
    ]
