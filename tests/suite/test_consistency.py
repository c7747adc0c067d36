"""The plugin's side of the consistency check: what SGLang compares and the check does not is listed."""

from __future__ import annotations

import io

from PIL import Image

from pytest_diffperf.cases import Case
from pytest_diffperf.consistency.clip import TINY_MODEL
from pytest_diffperf.consistency.config import ConsistencyConfig
from pytest_diffperf.consistency.thresholds import BUILTIN_DEFAULTS, ThresholdSet
from pytest_diffperf.serving.client import Output
from pytest_diffperf.suite.consistency import check_case_output
from tests.consistency.synth import scene


def jpeg() -> bytes:
    buf = io.BytesIO()
    Image.fromarray(scene(7)).save(buf, format="JPEG")
    return buf.getvalue()


def test_audio_sglang_compares_is_listed_as_not_compared_with_the_reason(tmp_path):
    case = Case.model_validate(
        {
            "id": "av",
            "model": "m",
            "task": "text-to-image",
            "prompt": "p",
            "sglang_checks_not_run": ["expect_audio_output"],
        }
    )
    cfg = ConsistencyConfig(gt_dir=tmp_path, clip_model=TINY_MODEL, clip_pretrained="none")
    limits = ThresholdSet([], dict(BUILTIN_DEFAULTS), {}, {}, {})
    output = Output("r1", "image", jpeg(), "jpg")
    check_case_output(case, output, ConsistencyConfig(gt_dir=tmp_path, regen=True), limits)
    result, failure = check_case_output(case, output, cfg, limits)
    assert failure is None and result["status"] == "pass"
    assert result["not_compared"] == [
        "audio: SGLang also compares the video's sound track with <case>_<n>gpu_audio.wav (spectral similarity, "
        "waveform correlation, RMS dB, duration); the plugin does not decode audio yet"
    ]
    assert result["message"].endswith("\n  not compared: " + result["not_compared"][0])
    plain = Case.model_validate({"id": "av", "model": "m", "task": "text-to-image", "prompt": "p"})
    assert check_case_output(plain, output, cfg, limits)[0]["not_compared"] == []
