"""Request bodies sent for a case: SGLang's fields, extras merged last, None deleting a key."""

from pytest_diffperf.cases import Case
from pytest_diffperf.serving.client import request_body


def test_image_body_has_openai_fields_and_sampling_extras():
    case = Case(
        id="c",
        model="m",
        task="text-to-image",
        prompt="p",
        width=256,
        height=128,
        seed=7,
        num_inference_steps=8,
        guidance_scale=3.5,
        output_format="jpeg",
    )
    assert request_body(case) == {
        "model": "m",
        "prompt": "p",
        "size": "256x128",
        "n": 1,
        "response_format": "b64_json",
        "output_format": "jpeg",
        "seed": 7,
        "num_inference_steps": 8,
        "guidance_scale": 3.5,
    }


def test_video_body_and_request_extra_merge_with_none_deleting():
    case = Case(
        id="c",
        model="m",
        task="text-to-video",
        prompt="p",
        width=64,
        height=64,
        num_frames=9,
        fps=8,
        sglang_request_extra={"fps": None, "flow_shift": 12.0, "target": {"short_edge": 64}},
    )
    assert request_body(case) == {
        "model": "m",
        "prompt": "p",
        "size": "64x64",
        "num_frames": 9,
        "flow_shift": 12.0,
        "target": {"short_edge": 64},
    }
