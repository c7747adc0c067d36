"""A video's sound track against its ground truth, as SGLang compares it (its own functions as the reference)."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest

from pytest_diffperf.consistency import audio, manifest
from pytest_diffperf.consistency.check import check_output
from pytest_diffperf.consistency.result import ConsistencyFailure
from pytest_diffperf.consistency.thresholds import AudioThresholds, load_thresholds
from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.sglang import harness
from pytest_diffperf.sglang.source import locate
from tests.support.paths import SGLANG_DATA

from .synth import VIDEO_T, av_clip

RATE = audio.SAMPLE_RATE


def tone(freq: float, seconds: float = 1.0, amp: float = 0.3, seed: int | None = None) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    x = amp * np.sin(2 * np.pi * freq * t)
    if seed is not None:
        x = x + np.random.default_rng(seed).normal(0, 0.05, x.size)
    return x.astype(np.float32)


def frames_of(media: bytes) -> list[np.ndarray]:
    import av

    with av.open(io.BytesIO(media)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


@pytest.fixture(scope="module")
def sglang_utils():
    loaded = harness.load(locate(SGLANG_DATA / "v0.5.23" / "src"), "h100")
    return loaded.modules["sglang.multimodal_gen.test.test_utils"]


@pytest.mark.parametrize(
    "output, gt",
    [
        (tone(440), tone(440)),
        (tone(440, seed=1), tone(440)),
        (tone(660), tone(440)),
        (tone(440, amp=0.9), tone(440)),
        (tone(440, seconds=1.3), tone(440)),
        (tone(440, seconds=0.01), tone(440)),
    ],
)
def test_the_metrics_are_sglang_s(sglang_utils, output, gt):
    t = sglang_utils.AudioConsistencyThresholds(0.95, 0.9, 2.0, 0.1)
    theirs = sglang_utils.compare_audio_with_gt(output, gt, t)
    mine = audio.compare(output, gt)
    assert mine.spectral == pytest.approx(theirs.spectral_similarity, abs=1e-6)
    assert mine.waveform == pytest.approx(theirs.waveform_correlation, abs=1e-9)
    assert mine.rms_db == pytest.approx(theirs.rms_db_diff, abs=1e-9)
    assert mine.duration == theirs.duration_diff
    assert (not mine.failed(AudioThresholds())) == theirs.passed


def test_the_wav_format_is_sglang_s(sglang_utils):
    x = tone(300, seed=2)
    assert audio.encode_wav(x) == sglang_utils.encode_audio_gt_wav(x)
    np.testing.assert_array_equal(
        audio.decode_wav(audio.encode_wav(x)), sglang_utils.decode_audio_gt_wav(audio.encode_wav(x))
    )
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * 10)
    with pytest.raises(ValueError, match="expected mono 16-bit PCM at 16000 Hz, got 1 channel"):
        audio.decode_wav(buf.getvalue())


def test_the_track_decodes_at_16_khz_mono():
    track = audio.decode_track(av_clip(seconds=1.0))
    assert track.dtype == np.float32 and abs(track.size - RATE) < RATE * 0.01
    spectrum = np.abs(np.fft.rfft(track[2000:12000]))
    assert abs(np.argmax(spectrum) * RATE / 10000 - 440) < 5


def test_regenerated_sound_track_passes_another_tone_fails(make_cfg, gt_dir):
    media = av_clip()
    frames = frames_of(media)
    limits = AudioThresholds()
    done = check_output("av", 1, True, "mp4", frames, VIDEO_T, make_cfg(regen=True), media=media, audio=limits)
    assert (gt_dir / "av_1gpu_audio.wav").is_file() and str(gt_dir / "av_1gpu_audio.wav") in done.gt_files
    result = check_output("av", 1, True, "mp4", frames, VIDEO_T, make_cfg(), media=media, audio=limits)
    assert result.status == "pass" and result.audio is not None
    assert result.audio["failed"] == [] and result.audio["spectral_similarity"] > 0.99
    assert (
        "\n  sound track: spectral_similarity 0.9999 (>= 0.95), waveform_correlation 1.0000 (>= 0.9)" in result.message
    )
    other = av_clip(freq=660)
    with pytest.raises(ConsistencyFailure) as err:
        check_output("av", 1, True, "mp4", frames_of(other), VIDEO_T, make_cfg(), media=other, audio=limits)
    assert "differs from its ground truth: spectral_similarity, waveform_correlation of the sound track" in str(
        err.value
    )
    assert (err.value.result.audio or {})["failed"] == ["spectral_similarity", "waveform_correlation"]


def test_missing_audio_ground_truth_and_a_silent_output_fail(make_cfg, gt_dir, tmp_path):
    media = av_clip()
    frames = frames_of(media)
    check_output("av", 1, True, "mp4", frames, VIDEO_T, make_cfg(regen=True), media=media)  # no audio written
    assert not (gt_dir / "av_1gpu_audio.wav").exists()
    cfg = make_cfg(artifacts_dir=tmp_path / "art")
    with pytest.raises(ConsistencyFailure) as err:
        check_output("av", 1, True, "mp4", frames, VIDEO_T, cfg, media=media, audio=AudioThresholds())
    assert "av_1gpu_audio.wav not found in" in str(err.value) and err.value.result.reason == "missing-gt"
    assert (tmp_path / "art" / "missing-gt" / "av_1gpu_audio.wav").is_file()
    silent = av_clip(audio=False)
    with pytest.raises(ConsistencyFailure, match="expects a sound track: the output has no audio stream"):
        check_output("av", 1, True, "mp4", frames_of(silent), VIDEO_T, cfg, media=silent, audio=AudioThresholds())


def test_a_broken_audio_ground_truth_is_one_error_naming_it(make_cfg, gt_dir):
    media = av_clip()
    frames = frames_of(media)
    check_output("av", 1, True, "mp4", frames, VIDEO_T, make_cfg(regen=True), media=media, audio=AudioThresholds())
    (gt_dir / "av_1gpu_audio.wav").write_bytes(b"RIFF nonsense")
    assert "av_1gpu_audio.wav" in manifest.rebuild(gt_dir).files  # `record` lists sound tracks too
    with pytest.raises(DiffperfError, match=r"av_1gpu_audio.wav: not SGLang's audio ground truth: not a WAV file"):
        check_output("av", 1, True, "mp4", frames, VIDEO_T, make_cfg(), media=media, audio=AudioThresholds())


def test_audio_thresholds_come_from_sglang_s_file():
    limits = load_thresholds(SGLANG_DATA / "v0.5.23" / "consistency_thresholds", "h100")
    assert limits.audio_for_case("any") == AudioThresholds(0.95, 0.90, 2.0, 0.1)


def test_a_data_repository_clone_holds_the_sound_track_where_sglang_reads_it(tmp_path, make_cfg):
    from pytest_diffperf.consistency.gtlookup import open_source
    from pytest_diffperf.consistency.gtsource import parse_gt_source
    from pytest_diffperf.consistency.sglangrules import read_rules

    clone = tmp_path / "consistency_gt"
    (clone / "sglang_generated").mkdir(parents=True)
    rules = read_rules(SGLANG_DATA / "v0.5.23" / "src" / "sglang" / "multimodal_gen" / "test" / "test_utils.py")
    _, sglang = open_source(parse_gt_source(str(clone)), rules, "h100", {})
    media = av_clip()
    frames = frames_of(media)
    regen = make_cfg(gt_dir=clone, sglang=sglang, regen=True)
    check_output("fsdp-inference", 2, True, "mp4", frames, VIDEO_T, regen, media=media, audio=AudioThresholds())
    assert (clone / "sglang_generated" / "fsdp-inference_2gpu_audio.wav").is_file()  # by the case id, as SGLang
    assert (clone / "sglang_generated" / "zimage_image_t2i_2_gpus_2gpu_frame_mid.png").is_file()  # aliased
    (clone / "sglang_generated" / "fsdp-inference_2gpu_audio.wav").rename(
        clone / "sglang_generated" / "zimage_image_t2i_2_gpus_2gpu_audio.wav"
    )  # the lookup reads the alias's file (SGLang's _audio_consistency_gt_filenames)
    manifest.rebuild(clone)
    cfg = make_cfg(gt_dir=clone, sglang=sglang)
    result = check_output("fsdp-inference", 2, True, "mp4", frames, VIDEO_T, cfg, media=media, audio=AudioThresholds())
    assert result.status == "pass" and result.audio is not None
    assert result.audio["gt_file"] == str(clone / "sglang_generated" / "zimage_image_t2i_2_gpus_2gpu_audio.wav")
