"""A video's sound track against its ground truth, as SGLang compares it (``compare_audio_with_gt``).

The track is decoded in-process with PyAV as mono float32 PCM at 16 kHz (SGLang pipes ``ffmpeg -ac 1 -ar
16000 -f f32le``: the same resampling, libswresample); the GT is ``<case>_<n>gpu_audio.wav``, signed 16-bit
mono PCM at 16 kHz (``encode_audio_gt_wav``). Metrics over the common length: spectral similarity (cosine
of square-rooted STFT magnitudes, 512-sample Hann frames, hop 160), waveform correlation (Pearson), the RMS
level difference in dB, and the duration difference in seconds.
"""

from __future__ import annotations

import io
import math
import wave
from dataclasses import dataclass

import numpy as np

from .thresholds import AudioThresholds

SAMPLE_RATE = 16_000
FRAME, HOP = 512, 160
NAMES = {
    "spectral": "spectral_similarity",
    "waveform": "waveform_correlation",
    "rms_db": "rms_db_diff",
    "duration": "duration_diff",
}  # SGLang's metric names


@dataclass(frozen=True)
class AudioMetrics:
    spectral: float
    waveform: float
    rms_db: float
    duration: float

    def to_dict(self) -> dict[str, float]:
        return {name: getattr(self, field) for field, name in NAMES.items()}

    def failed(self, t: AudioThresholds) -> tuple[str, ...]:
        """The metrics that miss their thresholds, by SGLang's names."""
        checks = (
            (NAMES["spectral"], self.spectral >= t.spectral),
            (NAMES["waveform"], self.waveform >= t.waveform),
            (NAMES["rms_db"], self.rms_db <= t.rms_db),
            (NAMES["duration"], self.duration <= t.duration),
        )
        return tuple(name for name, ok in checks if not ok)


def gt_name(case_id: str, num_gpus: int) -> str:
    """The sound track's GT file in a plain folder (SGLang's ``_audio_consistency_gt_filenames``)."""
    return f"{case_id}_{num_gpus}gpu_audio.wav"


def decode_track(media: bytes) -> np.ndarray:
    """The first audio stream of a media file as mono float32 PCM at 16 kHz; ValueError when it has none."""
    import av

    with av.open(io.BytesIO(media)) as container:
        if not container.streams.audio:
            raise ValueError("the output has no audio stream")
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        chunks = []
        for frame in container.decode(audio=0):
            chunks += [f.to_ndarray().reshape(-1) for f in resampler.resample(frame)]
        chunks += [f.to_ndarray().reshape(-1) for f in resampler.resample(None)]
    return np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)


def encode_wav(audio: np.ndarray) -> bytes:
    """SGLang's ``encode_audio_gt_wav``: 16-bit mono PCM at 16 kHz."""
    pcm = np.round(np.clip(audio, -1.0, 1.0) * 32767.0).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(SAMPLE_RATE)
        wav.writeframes(pcm.tobytes())
    return out.getvalue()


def decode_wav(data: bytes) -> np.ndarray:
    """SGLang's ``decode_audio_gt_wav``; ValueError saying what the file is when it is not that."""
    try:
        with wave.open(io.BytesIO(data), "rb") as wav:
            shape = (wav.getnchannels(), wav.getsampwidth(), wav.getframerate())
            pcm = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
    except (wave.Error, EOFError) as exc:
        raise ValueError(f"not a WAV file: {exc}") from None
    if shape != (1, 2, SAMPLE_RATE):
        raise ValueError(
            f"expected mono 16-bit PCM at {SAMPLE_RATE} Hz, got {shape[0]} channel(s), {8 * shape[1]}-bit, {shape[2]} Hz"
        )
    return pcm.astype(np.float32) / 32767.0


def _spectrogram(audio: np.ndarray) -> np.ndarray:
    if audio.size < FRAME:
        audio = np.pad(audio, (0, FRAME - audio.size))
    count = 1 + (audio.size - FRAME) // HOP
    frames = np.lib.stride_tricks.sliding_window_view(audio, FRAME)[: count * HOP : HOP]
    magnitude = np.abs(np.fft.rfft(frames * np.hanning(FRAME).astype(np.float32), axis=1))
    return np.sqrt(magnitude).astype(np.float32, copy=False)


def compare(output: np.ndarray, gt: np.ndarray) -> AudioMetrics:
    """SGLang's metrics; ValueError when a track is empty or not finite."""
    output, gt = np.asarray(output, np.float32).reshape(-1), np.asarray(gt, np.float32).reshape(-1)
    if output.size == 0 or gt.size == 0:
        raise ValueError("an audio track is empty")
    if not (np.isfinite(output).all() and np.isfinite(gt).all()):
        raise ValueError("an audio track holds NaN or inf")
    duration = abs(output.size - gt.size) / float(SAMPLE_RATE)
    n = min(output.size, gt.size)
    out, ref = output[:n], gt[:n]
    oc, rc = out - float(out.mean()), ref - float(ref.mean())
    denominator = float(np.linalg.norm(oc) * np.linalg.norm(rc))
    waveform = float(np.dot(oc, rc)) / denominator if denominator > 0 else 0.0
    so, sr = _spectrogram(out), _spectrogram(ref)
    denominator = float(np.linalg.norm(so) * np.linalg.norm(sr))
    spectral = float(np.vdot(so, sr)) / denominator if denominator > 0 else 0.0
    rms_o = float(np.sqrt(np.mean(np.square(out, dtype=np.float64))))
    rms_r = float(np.sqrt(np.mean(np.square(ref, dtype=np.float64))))
    rms_db = abs(20.0 * math.log10(max(rms_o, 1e-12)) - 20.0 * math.log10(max(rms_r, 1e-12)))
    return AudioMetrics(spectral, waveform, rms_db, duration)
