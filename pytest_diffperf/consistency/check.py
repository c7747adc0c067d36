"""The consistency check of one output: select frames, find and verify GT, compare, report.

``check_output`` is the one entry point; it returns a ConsistencyResult or raises
ConsistencyFailure (message prefix ``CONSISTENCY:``); configuration problems raise DiffperfError.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DiffperfError
from . import artifacts, audio, embcache, groundtruth, manifest, preflight
from .clip import Embedder, get_embedder
from .config import ConsistencyConfig
from .metrics import check_frame, cosine, pixel_metrics
from .result import PREFIX, ConsistencyFailure, ConsistencyResult, FrameResult, frame_line, thresholds_line
from .sglangrules import Kind, regen_subtree
from .thresholds import AudioThresholds, Thresholds


def check_output(
    case_id: str,
    num_gpus: int,
    is_video: bool,
    output_ext: str,
    frames: list[np.ndarray],
    thresholds: Thresholds,
    cfg: ConsistencyConfig,
    media: bytes | None = None,
    audio: AudioThresholds | None = None,
) -> ConsistencyResult:
    """Compare an output with its ground truth, or write it as GT when ``cfg.regen``.

    ``frames``: all decoded uint8 RGB frames of the output (one for an image). ``output_ext``: the
    image's file extension (``png``/``jpg``; ignored for video). ``media``: the file as served; GT
    regeneration writes an image verbatim under SGLang's name (without it, the pixels go to a PNG).
    ``audio``: a video's sound track is compared too (SGLang's ``expect_audio_output``), by these thresholds.
    """
    if cfg.regen:
        return _regenerate(case_id, num_gpus, is_video, output_ext, frames, cfg, media, audio is not None)
    if cfg.skip:
        return ConsistencyResult(case_id, num_gpus, is_video, "skipped", message=cfg.skip_reason)
    gt_dir = cfg.require_gt_dir()
    picks = _picks(frames, is_video, cfg)
    labels = [label for _, label in picks]
    names = groundtruth.gt_names(case_id, num_gpus, is_video, output_ext, labels)
    kind: Kind = "video" if is_video else "image"
    if cfg.sglang is not None:
        located = cfg.sglang.locate(case_id, num_gpus, kind, output_ext, tuple(labels))
    else:
        located = groundtruth.locate(gt_dir, cfg.platform, names, is_video)
    result = ConsistencyResult(case_id, num_gpus, is_video, "fail", thresholds=thresholds)
    outs = [frames[index] for index, _ in picks]
    if located.missing:
        ready = _gt_files(case_id, num_gpus, is_video, output_ext, frames, picks, media)
        if cfg.sglang is not None:  # as the data repository holds them: sglang_generated/<SGLang's name>
            rels = cfg.sglang.regen_files(case_id, num_gpus, kind, output_ext, tuple(labels))
            ready = dict(zip(rels, ready.values(), strict=True))
        _fail_missing(result, cfg, located, names, ready)
    paths = [p for p in located.files if p is not None]
    result.gt_files = [str(p) for p in paths]
    datas = [preflight.read_gt(gt_dir, p) for p in paths]
    shas = [manifest.sha256(d) for d in datas]
    result.integrity = _verify(result, gt_dir, paths, shas)
    gts = [preflight.decode_gt(p, d) for p, d in zip(paths, datas, strict=True)]
    _check_shapes(result, picks, outs, gts, paths)
    sims = _clip_similarities(get_embedder(cfg.clip_model, cfg.clip_pretrained), outs, gts, paths, shas)
    for (index, label), out, gt, path, sim in zip(picks, outs, gts, paths, sims, strict=True):
        metrics = pixel_metrics(out, gt, sim)
        result.frames.append(FrameResult(index, label, str(path), metrics, tuple(metrics.failed(thresholds))))
    failed = [f for f in result.frames if f.failed]
    audio_failed = _check_audio(result, cfg, media, audio) if audio is not None else ()
    result.status = "fail" if failed or audio_failed else "pass"
    result.reason = "mismatch" if failed or audio_failed else None
    if cfg.artifacts_dir is not None:
        result.artifacts = [str(p) for p in artifacts.case_paths(cfg.artifacts_dir, case_id, num_gpus)]
    result.message = _summary(result, failed, audio_failed)
    if cfg.artifacts_dir is not None:
        artifacts.write_case(cfg.artifacts_dir, result, outs, gts)
    if failed or audio_failed:
        raise ConsistencyFailure(result)
    return result


def _check_audio(
    result: ConsistencyResult, cfg: ConsistencyConfig, media: bytes | None, limits: AudioThresholds
) -> tuple[str, ...]:
    """The sound track against ``<case>_<n>gpu_audio.wav`` (SGLang's metrics) into ``result.audio``; the metrics
    that fail. ConsistencyFailure when the output has no track or the GT is missing."""
    gt_dir = cfg.require_gt_dir()
    case_id, num_gpus = result.case_id, result.num_gpus
    try:
        track = audio.decode_track(media or b"")
    except (ValueError, OSError, av_errors()) as exc:
        result.reason = "mismatch"
        result.message = f"{PREFIX} case {case_id} ({num_gpus} GPU) expects a sound track: {exc}"
        raise ConsistencyFailure(result) from None
    name = audio.gt_name(case_id, num_gpus)
    if cfg.sglang is not None:
        located = cfg.sglang.locate(case_id, num_gpus, "audio", None, ("",))
        ready = {cfg.sglang.regen_files(case_id, num_gpus, "audio", "wav", ("",))[0]: audio.encode_wav(track)}
    else:
        located = groundtruth.locate(gt_dir, cfg.platform, [name], True)
        ready = {name: audio.encode_wav(track)}
    path = located.files[0]
    if path is None:
        _fail_missing(result, cfg, located, [name], ready)
    assert path is not None
    data = preflight.read_gt(gt_dir, path)
    _verify(result, gt_dir, [path], [manifest.sha256(data)])
    try:
        metrics = audio.compare(track, audio.decode_wav(data))
    except ValueError as exc:
        raise DiffperfError(f"not SGLang's audio ground truth: {exc}", source=str(path)) from None
    failed = metrics.failed(limits)
    thresholds = {audio.NAMES[k]: getattr(limits, k) for k in audio.NAMES}
    result.audio = {"gt_file": str(path), **metrics.to_dict(), "thresholds": thresholds, "failed": list(failed)}
    result.gt_files.append(str(path))
    return failed


def av_errors() -> type[Exception]:
    """PyAV's decoding error (an Exception, neither OSError nor ValueError)."""
    import av

    return av.error.FFmpegError


def _picks(frames: list[np.ndarray], is_video: bool, cfg: ConsistencyConfig) -> list[tuple[int, str]]:
    """(frame index, GT label) of each compared frame; the frames must be uint8 RGB."""
    if not frames:
        raise ValueError("no output frames to compare")
    for i, frame in enumerate(frames):
        check_frame(frame, f"output frame {i}")
    return cfg.frames.select(len(frames)) if is_video else [(0, "")]


def _regenerate(
    case_id: str,
    num_gpus: int,
    is_video: bool,
    output_ext: str,
    frames: list[np.ndarray],
    cfg: ConsistencyConfig,
    media: bytes | None,
    with_audio: bool = False,
) -> ConsistencyResult:
    """Write the output as the case's GT (where the check will read it) and record its hashes (a video's sound
    track too, ``with_audio``)."""
    gt_dir = cfg.require_gt_dir()
    picks = _picks(frames, is_video, cfg)
    files = _gt_files(case_id, num_gpus, is_video, output_ext, frames, picks, media)
    if cfg.sglang is not None:  # a data-repository clone: where SGLang's GT generation puts new files
        labels = tuple(label for _, label in picks)
        rels = cfg.sglang.regen_files(case_id, num_gpus, "video" if is_video else "image", output_ext, labels)
        targets = {gt_dir / rel: data for rel, data in zip(rels, files.values(), strict=True)}
    else:
        folder = groundtruth.locate(gt_dir, cfg.platform, list(files), is_video).folder
        targets = {folder / name: data for name, data in files.items()}
    if with_audio and is_video:
        wav = audio.encode_wav(audio.decode_track(media or b""))
        if cfg.sglang is not None:
            targets[gt_dir / cfg.sglang.regen_files(case_id, num_gpus, "audio", "wav", ("",))[0]] = wav
        else:
            targets[next(iter(targets)).parent / audio.gt_name(case_id, num_gpus)] = wav
    # A data-repository clone gets no manifest of its own (a pull request carries the GT files alone) unless
    # one was recorded there by hand.
    groundtruth.write(gt_dir, targets, record=cfg.sglang is None or manifest.load(gt_dir) is not None)
    paths = [str(path) for path in targets]
    return ConsistencyResult(
        case_id, num_gpus, is_video, "regenerated", message=f"wrote {', '.join(paths)}", gt_files=paths
    )


def _gt_files(
    case_id: str,
    num_gpus: int,
    is_video: bool,
    output_ext: str,
    frames: list[np.ndarray],
    picks: list[tuple[int, str]],
    media: bytes | None,
) -> dict[str, bytes]:
    """The output as GT files, by name: the image file verbatim, else PNGs of the picked frames."""
    labels = [label for _, label in picks]
    if not is_video and media is not None:
        return {groundtruth.gt_names(case_id, num_gpus, False, output_ext, labels)[0]: media}
    names = groundtruth.gt_names(case_id, num_gpus, is_video, "png", labels)
    return {name: groundtruth.encode_png(frames[index]) for name, (index, _) in zip(names, picks, strict=True)}


def _fail_missing(
    result: ConsistencyResult,
    cfg: ConsistencyConfig,
    located: groundtruth.Located,
    names: list[str],
    ready: dict[str, bytes],
) -> None:
    gt_dir = cfg.require_gt_dir()
    folder = artifacts.ready_folder(cfg.artifacts_dir, ready)
    result.reason = "missing-gt"
    if located.tried:
        assert cfg.sglang is not None
        result.message = (
            f"{PREFIX} no ground truth for case {result.case_id} ({result.num_gpus} GPU) in {cfg.sglang.tree.label}; "
            f"tried, in order:\n" + "\n".join(f"    {where}" for where in located.tried) + "\n"
            f"  this run's output is ready under SGLang's names in {folder / regen_subtree(cfg.sglang.npu)}\n"
            f"  add them to the data repository's {regen_subtree(cfg.sglang.npu)}/ "
            f"(a pull request), or write them into a local clone with --regen-ground-truth -k {result.case_id}"
        )
        raise ConsistencyFailure(result)
    where = f"{gt_dir}" + (f" (nor in {gt_dir / cfg.platform})" if cfg.platform else "")
    result.message = (
        f"{PREFIX} no ground truth for case {result.case_id} ({result.num_gpus} GPU): "
        f"{', '.join(names[i] for i in located.missing)} not found in {where}\n"
        f"  this run's output is ready under the expected names in {folder}\n"
        f"  copy those files into {located.folder} and record their hashes with "
        f"`{manifest.RECORD_COMMAND.format(gt_dir=gt_dir)}`, or write them directly with "
        f"--regen-ground-truth -k {result.case_id}"
    )
    raise ConsistencyFailure(result)


def _verify(result: ConsistencyResult, gt_dir: Path, paths: list[Path], shas: list[str]) -> str:
    """Return "verified" or why the GT is unverified; ConsistencyFailure if a file fails its hash."""
    recorded = manifest.load(gt_dir)
    if recorded is None:
        return f"unverified: no {manifest.MANIFEST} in {gt_dir}"
    problems = [manifest.integrity_problem(gt_dir, recorded, p, s) for p, s in zip(paths, shas, strict=True)]
    problems = [p for p in problems if p]
    if problems:
        result.reason = "integrity"
        result.message = "\n".join(
            [f"{PREFIX} ground-truth integrity check failed for case {result.case_id}:"]
            + [f"  {p}" for p in problems]
            + [
                f"  if the GT change is intended, re-record the hashes with "
                f"`{manifest.RECORD_COMMAND.format(gt_dir=gt_dir)}`, or regenerate the GT with "
                f"--regen-ground-truth -k {result.case_id}"
            ]
        )
        raise ConsistencyFailure(result)
    return "verified"


def _check_shapes(
    result: ConsistencyResult,
    picks: list[tuple[int, str]],
    outs: list[np.ndarray],
    gts: list[np.ndarray],
    paths: list[Path],
) -> None:
    """ConsistencyFailure naming every frame whose size differs from its GT's (never resized)."""
    bad = [
        f"  frame {label or 'image'} (index {index}) is {out.shape[1]}x{out.shape[0]}, its GT {path} is "
        f"{gt.shape[1]}x{gt.shape[0]}"
        for (index, label), out, gt, path in zip(picks, outs, gts, paths, strict=True)
        if out.shape != gt.shape
    ]
    if bad:
        result.reason = "shape"
        result.message = (
            f"{PREFIX} case {result.case_id} ({result.num_gpus} GPU): output size differs from its ground truth "
            f"(frames are never resized):\n" + "\n".join(bad) + f"\n  if the new size is intended, "
            f"regenerate with --regen-ground-truth -k {result.case_id}"
        )
        raise ConsistencyFailure(result)


def _clip_similarities(
    embedder: Embedder, outs: list[np.ndarray], gts: list[np.ndarray], paths: list[Path], shas: list[str]
) -> list[float]:
    """CLIP cosine per frame; GT embeddings come from the cache, the rest go in one batch."""
    keys = [embcache.cache_path(p, embedder.key, s) for p, s in zip(paths, shas, strict=True)]
    gt_embs = [embcache.load(k) for k in keys]
    todo = [i for i, e in enumerate(gt_embs) if e is None]
    embs = embedder.embed(outs + [gts[i] for i in todo])
    for j, i in enumerate(todo):
        gt_embs[i] = embs[len(outs) + j]
        embcache.store(keys[i], embs[len(outs) + j])
    filled = [e for e in gt_embs if e is not None]  # every one, now
    return [cosine(o, g) for o, g in zip(embs[: len(outs)], filled, strict=True)]


def _summary(result: ConsistencyResult, failed: list[FrameResult], audio_failed: tuple[str, ...] = ()) -> str:
    assert result.thresholds is not None
    if failed or audio_failed:
        whats = [f"{', '.join(f.failed)} on {'frame ' + f.label if f.label else 'the image'}" for f in failed]
        whats += [f"{', '.join(audio_failed)} of the sound track"] if audio_failed else []
        head = (
            f"{PREFIX} case {result.case_id} ({result.num_gpus} GPU) differs from its ground truth: {'; '.join(whats)}"
        )
    else:
        head = f"consistency: case {result.case_id} ({result.num_gpus} GPU) matches its ground truth"
    lines = [head, f"  thresholds: {thresholds_line(result.thresholds)}"]
    lines += [f"  {frame_line(f)}" for f in result.frames]
    if result.audio is not None:
        limits = result.audio["thresholds"]
        lines.append(
            "  sound track: "
            + ", ".join(f"{name} {result.audio[name]:.4f} ({'<=' if name.endswith('diff') else '>='} {limit:g})"
                        for name, limit in limits.items())
        )  # fmt: skip
    lines.append(f"  GT files ({result.integrity}):")
    lines += [f"    {p}" for p in result.gt_files]
    if result.artifacts:
        lines.append(f"  artifacts: {', '.join(result.artifacts)}")
    return "\n".join(lines)
