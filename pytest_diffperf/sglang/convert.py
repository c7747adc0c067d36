"""One of SGLang's ``DiffusionTestCase`` objects -> the JSON of a plugin case (``cases.Case``), or why it cannot be one.

The request is the one SGLang's ``get_generate_fn`` (``test_server_utils.py``) builds for the case:
the same generation function is chosen, and every field it sends is mapped to the case field the
plugin's client sends it from (``client.request_body``). The server command and environment are
those of SGLang's ``diffusion_server`` fixture (``test_server_common.py``), flag for flag.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

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


def convert(tc: Any, suites: Sequence[str] = ()) -> Converted:
    """The plugin case for SGLang's ``DiffusionTestCase`` ``tc`` (read after its ``__post_init__``)."""
    sa, sp = tc.server_args, tc.sampling_params
    kind = request_kind(sa.modality, sp)
    suites = tuple(suites)
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
        case["timeout_s"] = VIDEO_JOB_TIMEOUT_S
        if kind == "generate_video":
            if sp.num_frames:
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
    case["frameworks"] = {"sglang": {"serve_args": serve_args(sa), "extra_env": server_env(sa)}}
    case["run_perf_check"] = tc.run_perf_check
    case["run_consistency_check"] = tc.run_consistency_check
    case["perf_repeat_requests"] = tc.perf_repeat_requests
    case["perf_warmup_requests"] = tc.perf_warmup_requests
    not_run = [name for name in UNSUPPORTED_CHECKS if getattr(tc, name, False)]
    not_run += [label for label, on in _other_checks(tc, sp) if on]
    if not_run:
        case["sglang_checks_not_run"] = not_run
    case["sglang_suites"] = list(suites)
    return Converted(tc.id, suites, kind, case=case)


def serve_args(sa: Any) -> str:
    """The flags SGLang's ``diffusion_server`` fixture adds after ``--num-gpus``, ``--strict-ports`` included."""
    args = []
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
    if sa.cfg_parallel:
        args.append("--enable-cfg-parallel")
    if sa.lora_path:
        args.append(f"--lora-path {sa.lora_path}")
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
