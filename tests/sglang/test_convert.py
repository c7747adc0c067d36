"""Conversion of SGLang cases the 0.5.23 lists do not have (built with SGLang's own dataclasses)."""

from __future__ import annotations

import pytest

from pytest_diffperf.cases import Case
from pytest_diffperf.serving.client import request_body
from pytest_diffperf.sglang.convert import convert


@pytest.fixture(scope="module")
def configs(harness):
    return harness.configs


def make(configs, modality: str, **sampling):
    server = configs.DiffusionServerArgs(model_path="org/model", modality=modality)
    return configs.DiffusionTestCase(
        "c", server, configs.DiffusionSamplingParams(**sampling), run_consistency_check=False
    )


def test_image_to_video_without_a_prompt_sends_neither_prompt_nor_frames(configs):
    converted = convert(make(configs, "video", image_path="/data/in.jpg", num_frames=9, fps=8, output_size="64x64"))
    case = Case.model_validate(converted.case)
    assert (case.task, case.reference_image, case.seconds) == ("image-to-video", "/data/in.jpg", 1)
    assert request_body(case) == {"model": "org/model", "size": "64x64", "seconds": 1}  # as generate_image_to_video


@pytest.mark.parametrize(
    ("modality", "sampling", "reason"),
    [
        ("image", {"prompt": "p", "num_outputs_per_prompt": 2}, "not expressible yet: several outputs per request"),
        ("image", {"prompt": ""}, "SGLang's harness skips it: no prompt"),
        ("video", {"prompt": "p", "realtime_num_chunks": 2}, "not expressible yet: a realtime video"),
    ],
)
def test_cases_the_plugin_cannot_send_say_why(configs, modality, sampling, reason):
    converted = convert(make(configs, modality, **sampling))
    assert converted.case is None
    assert converted.reason is not None and converted.reason.startswith(reason)


def test_values_that_do_not_fit_a_case_field_stay_request_extras(configs):
    converted = convert(
        make(configs, "image", prompt="p", output_format="webp", extras={"seed": [1, 2], "num_inference_steps": 0})
    )
    case = Case.model_validate(converted.case)
    assert case.seed is None
    assert case.num_inference_steps is None
    assert case.output_format is None
    assert case.sglang_request_extra == {"size": "", "output_format": "webp", "seed": [1, 2], "num_inference_steps": 0}
