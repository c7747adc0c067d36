"""The plugin's side of the consistency check: a case SGLang checks with audio gets its sound track compared."""

from __future__ import annotations

import pytest

from pytest_diffperf.cases import Case
from pytest_diffperf.consistency.clip import TINY_MODEL
from pytest_diffperf.consistency.config import ConsistencyConfig
from pytest_diffperf.consistency.thresholds import BUILTIN_DEFAULTS, ThresholdSet
from pytest_diffperf.serving.client import Output
from pytest_diffperf.suite.consistency import check_case_output, expects_audio
from tests.consistency.synth import av_clip

VIDEO = {"id": "av", "model": "m", "task": "text-to-video", "prompt": "p"}


@pytest.mark.parametrize(
    "extra, expected",
    [
        ({}, False),
        ({"expect_audio_output": True}, True),
        ({"sglang_checks_not_run": ["expect_audio_output"]}, True),  # SGLang's lists, as converted
        ({"sglang_checks_not_run": ["reference_quality"]}, False),
    ],
)
def test_which_cases_expect_audio(extra, expected):
    assert expects_audio(Case.model_validate({**VIDEO, **extra})) is expected


def test_the_sound_track_of_a_case_expecting_audio_is_compared(tmp_path):
    case = Case.model_validate({**VIDEO, "expect_audio_output": True})
    limits = ThresholdSet([], dict(BUILTIN_DEFAULTS), {}, {}, {})
    regen = ConsistencyConfig(gt_dir=tmp_path, regen=True)
    cfg = ConsistencyConfig(gt_dir=tmp_path, clip_model=TINY_MODEL, clip_pretrained="none")
    check_case_output(case, Output("r1", "video", av_clip(), "mp4"), regen, limits)
    assert (tmp_path / "av_1gpu_audio.wav").is_file()
    result, failure = check_case_output(case, Output("r2", "video", av_clip(), "mp4"), cfg, limits)
    assert failure is None and result["audio"]["failed"] == []
    result, failure = check_case_output(case, Output("r3", "video", av_clip(freq=880), "mp4"), cfg, limits)
    assert failure is not None and "of the sound track" in str(failure)
    assert result["audio"]["failed"] == ["spectral_similarity", "waveform_correlation"]
    plain = Case.model_validate(VIDEO)
    assert check_case_output(plain, Output("r4", "video", av_clip(freq=880), "mp4"), cfg, limits)[0]["audio"] is None
