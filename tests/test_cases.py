"""Case file loading: SGLang's comparison config shape, our extensions, and clear errors."""

from __future__ import annotations

import json

import pytest

from pytest_diffperf.cases import load_cases
from pytest_diffperf.errors import DiffperfError

SGLANG_CASE = {
    "id": "minimax_h3_i2va_5090_consumer",
    "model": "MiniMaxAI/MiniMax-H3",
    "task": "image-to-video",
    "num_gpus": 1,
    "width": 864,
    "height": 480,
    "num_frames": 124,
    "fps": 24,
    "num_inference_steps": 20,
    "guidance_scale": 1.0,
    "seed": 1101,
    "reference_image": True,
    "prompt": "cats",
    "negative_prompt": "",
    "comfyui_workflow": "minimax_h3_i2va_5090.json",
    "sglang_request_extra": {"task": "fl2va", "fps": None},
    "frameworks": {
        "sglang": {"extra_env": {}, "serve_args": "--warmup-mode server"},
        "comfyui": {"extra_env": {"A": "1"}, "comfy_root": "${COMFY_ROOT}", "serve_args": "--fast-disk"},
    },
}


def write(tmp_path, data, name="cases.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_sglang_comparison_config_loads_with_unknown_keys_kept(tmp_path):
    path = write(tmp_path, {"_comment": "x", "measurement_repeats": 3, "test_image_url": "u", "cases": [SGLANG_CASE]})
    case = load_cases(path)["minimax_h3_i2va_5090_consumer"]
    assert case.is_video and case.num_frames == 124
    assert case.model_extra is not None and case.model_extra["comfyui_workflow"] == "minimax_h3_i2va_5090.json"
    comfyui_extra = case.framework("comfyui").model_extra
    assert comfyui_extra is not None and comfyui_extra["comfy_root"] == "${COMFY_ROOT}"
    assert case.framework("reference").serve_args == "--warmup-mode server"  # falls back to sglang
    assert case.perf_repeat_requests == 1 and case.run_perf_check


def base_case(**changes):
    case = {"id": "a", "model": "tiny/flux-t2i", "task": "text-to-image", "prompt": "p"}
    case.update(changes)
    return {k: v for k, v in case.items() if v is not ...}


@pytest.mark.parametrize(
    ("data", "key", "expected"),
    [
        ('{"cases": [', None, "invalid JSON"),
        ('{"cases": [], "cases": []}', "cases", "duplicate key"),
        ({"cases": {}}, "cases", "valid list"),
        ({}, "cases", "required key is missing"),
        ({"cases": [base_case(model=...)]}, "cases.0.model", "required key is missing"),
        ({"cases": [base_case(task="text-to-audio")]}, "cases.0.task", "text-to-image"),
        ({"cases": [base_case(width=-5)]}, "cases.0.width", "greater than 0"),
        ({"cases": [base_case(num_frames="many")]}, "cases.0.num_frames", "valid integer"),
        ({"cases": [base_case(perf_repeat_requests=0)]}, "cases.0.perf_repeat_requests", "greater than 0"),
        ({"cases": [base_case(perf_warmup_requests=-1)]}, "cases.0.perf_warmup_requests", "greater than or equal"),
        (
            {"cases": [base_case(frameworks={"sglang": {"serve_args": 3}})]},
            "cases.0.frameworks.sglang.serve_args",
            "valid string",
        ),
        ({"cases": [base_case(), base_case()]}, "cases.1.id", "duplicate case id 'a'"),
        ({"cases": [base_case(timeout_s=0)]}, "cases.0.timeout_s", "greater than 0"),
    ],
)
def test_malformed_case_files_name_file_and_key(tmp_path, data, key, expected):
    path = write(tmp_path, data)
    with pytest.raises(DiffperfError) as info:
        load_cases(path)
    message = str(info.value)
    assert message.startswith(str(path))
    assert expected.lower() in message.lower()
    if key:
        assert f": {key}: " in message


def test_missing_case_file_is_a_clear_error(tmp_path):
    with pytest.raises(DiffperfError, match="file not found"):
        load_cases(tmp_path / "nope.json")
